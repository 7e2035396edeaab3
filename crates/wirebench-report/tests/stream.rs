//! The TCP stream analysis read through its warnings' sentences and the human text (the figures alone: wirebench-analysis's tests).

use wirebench_model::abort::AbortReason;
use wirebench_model::result::{EndFallback, EndFlowError};
use wirebench_model::side::{
    HostRole, IntervalData, PathUsed, RecvWaitStats, Role, SideStatus, VerifyCounts, ZeroCopyStats,
};
use wirebench_model::spec::{Direction, FlowDir, RecvPath, RecvWait, SendPath};
use wirebench_model::warning::{
    Cause, CpuUnmeasured, DataThread, FallbackReason, FlowError, Noted, OsError, Step, Warning,
};

use super::*;
use wirebench_analysis::live::{self, LiveRows};
use wirebench_analysis::summarize;
use wirebench_report::print;

#[test]
fn bidir_has_both_directions() {
    let spec = stream_spec(Direction::Bidir, 1);
    let (c2s, s2c) = (FlowDir::ClientToServer, FlowDir::ServerToClient);
    let mut client = stream_report(
        HostRole::Client,
        vec![
            flow_side(0, c2s, Role::Sender, 1000, 1000, S, 2 * S),
            flow_side(1, s2c, Role::Receiver, 500, 500, S, 2 * S),
        ],
        None,
    );
    let mut server = stream_report(
        HostRole::Server,
        vec![
            flow_side(0, c2s, Role::Receiver, 1000, 1000, S, 2 * S),
            flow_side(1, s2c, Role::Sender, 500, 500, S, 2 * S),
        ],
        None,
    );
    let sample = |role0: Role, role1: Role| {
        byte_interval(0, 0, S / 2, false, &[(0, role0, 100), (1, role1, 50)])
    };
    stream_mut(&mut client).intervals = vec![sample(Role::Sender, Role::Receiver)];
    stream_mut(&mut server).intervals = vec![sample(Role::Receiver, Role::Sender)];
    let s = summarize(&spec, &client, Some(&server), false);
    let st = stream_of(&s);
    let dirs: Vec<FlowDir> = st.directions.iter().map(|d| d.dir).collect();
    assert_eq!(dirs, vec![c2s, s2c]);
    // 1000 B × 8 / 1 s and 500 B × 8 / 1 s.
    assert_eq!(st.directions[0].receiver_throughput_bps, 8000.0);
    assert_eq!(st.directions[1].receiver_throughput_bps, 4000.0);
    assert_eq!(st.flows[1].sender, HostRole::Server);
    assert_eq!(st.flows[1].dir, s2c);
    // One row per direction, each from its receiving end.
    assert_eq!(st.intervals.len(), 2);
    let i = &st.intervals;
    assert_eq!(
        (i[0].host, i[0].dir, i[0].bytes),
        (HostRole::Server, c2s, 100)
    );
    assert_eq!(
        (i[1].host, i[1].dir, i[1].bytes),
        (HostRole::Client, s2c, 50)
    );
    // 50 B × 8 / 0.5 s.
    assert_eq!(i[1].throughput_bps, 800.0);
    let sample = IntervalData::Stream(client.stream().unwrap().intervals[0].clone());
    let LiveRows::Stream(live) = live::rows(HostRole::Client, &spec, &sample) else {
        panic!("stream rows")
    };
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].dir, s2c);
    let no_cpu = Warning::NoCpuFigures {
        host: HostRole::Client,
    };
    assert!(has(&s, &no_cpu), "{:?}", s.warnings);
    assert_eq!(sentence(no_cpu), "client: no CPU figures");
}

#[test]
fn missing_server_report_uses_what_exists() {
    let (spec, client, _) = forward_two();
    let s = summarize(&spec, &client, None, false);
    let st = stream_of(&s);
    let d = &st.directions[0];
    assert_eq!(d.receiver_bytes, 0);
    assert_eq!(d.receiver_throughput_bps, 0.0);
    assert_eq!(d.sender_throughput_bps, 10e9);
    assert_eq!(d.sender_total_bytes, Some(1_400_000_000));
    assert_eq!(d.flow_throughput, None);
    assert!(has(&s, &Warning::NoServerReport), "{:?}", s.warnings);
    assert!(
        says(&s, "server: no report received"),
        "{:?}",
        sentences(&s)
    );
    // No claims about unaccounted bytes without the receiver's report.
    assert!(!has_where(&s, |w| matches!(w, Warning::UnreadBytes { .. })));
    assert!(!says(&s, "never read"));
    // Nor about the missing flows of a report that never came.
    assert!(!has_where(&s, |w| matches!(
        w,
        Warning::MissingFlowFigures { .. }
    )));
    assert_eq!(s.cpu.len(), 1);
    assert!(st.intervals.is_empty());
    for f in &st.flows {
        assert_eq!(f.receiver_bytes, 0);
        assert_eq!(f.rcvbuf_bytes, None);
        assert_eq!(f.sender_throughput_bps, 5e9);
    }
}

#[test]
fn unaccounted_bytes_are_explained() {
    let (spec, client, mut server) = forward_two();
    stream_mut(&mut server).flows[1].total_bytes -= 1000;
    let s = summarize(&spec, &client, Some(&server), false);
    assert_eq!(stream_of(&s).directions[0].unaccounted_bytes, Some(1000));
    // Senders 2 × 700 MB, receivers 1000 bytes fewer.
    assert!(
        has(
            &s,
            &Warning::UnreadBytes {
                dir: FlowDir::ClientToServer,
                sender_total_bytes: 1_400_000_000,
                receiver_total_bytes: 1_399_999_000,
            }
        ),
        "{:?}",
        s.warnings
    );
    assert!(
        says(&s, "1000 bytes were sent but never read"),
        "{:?}",
        sentences(&s)
    );
    assert!(says(&s, "cut short"));
}

#[test]
fn window_difference_note() {
    let (spec, mut client, server) = forward_two();
    // Sender +10 % of the receivers' total: 1.25e9 + 0.125e9 = 1.375e9 (written over the
    // whole test too, so that the window stays within it).
    stream_mut(&mut client).flows[0].window_bytes += 125_000_000;
    stream_mut(&mut client).flows[0].total_bytes += 125_000_000;
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(
        has(
            &s,
            &Warning::WindowEdgeDifference {
                dir: FlowDir::ClientToServer,
                sender_bytes: 1_375_000_000,
                receiver_bytes: 1_250_000_000,
            }
        ),
        "{:?}",
        s.warnings
    );
    assert!(says(&s, "note: forward"), "{:?}", sentences(&s));
    assert!(says(&s, "bytes in flight"));
    // Under 5 % (1e6 of 1.25e9 = 0.08 %): no note.
    let (spec, mut client, server) = forward_two();
    stream_mut(&mut client).flows[0].window_bytes += 1_000_000;
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(
        !has_where(&s, |w| matches!(w, Warning::WindowEdgeDifference { .. })),
        "{:?}",
        s.warnings
    );
    assert!(!says(&s, "note:"), "{:?}", sentences(&s));
}

#[test]
fn zero_window_does_not_panic() {
    let (spec, mut client, mut server) = forward_two();
    for f in stream_mut(&mut server)
        .flows
        .iter_mut()
        .chain(stream_mut(&mut client).flows.iter_mut())
    {
        f.window.end_ns = f.window.start_ns;
    }
    client.cpu = Some(cpu(4, 25.0, 60.0, S, 0));
    let iv = &mut stream_mut(&mut server).intervals[1];
    iv.span.end_ns = iv.span.start_ns;
    let s = summarize(&spec, &client, Some(&server), false);
    let st = stream_of(&s);
    let d = &st.directions[0];
    assert_eq!(d.receiver_throughput_bps, 0.0);
    assert_eq!(d.sender_throughput_bps, 0.0);
    assert!(st.flows.iter().all(|f| f.receiver_throughput_bps == 0.0));
    assert!(
        has(
            &s,
            &Warning::ZeroWindow {
                flow: 0,
                host: HostRole::Server,
                role: Role::Receiver
            }
        ),
        "{:?}",
        s.warnings
    );
    assert!(
        says(&s, "zero-length measurement window"),
        "{:?}",
        sentences(&s)
    );
    assert_eq!(st.intervals[1].throughput_bps, 0.0);
    assert_eq!(s.cpu[0].threads_util_pct_of_one_cpu, 0.0);
    assert_eq!(s.cpu[0].service_demand_us_per_kb, None);
    assert!(has(
        &s,
        &Warning::EmptyCpuWindow {
            host: HostRole::Client
        }
    ));
    assert!(says(&s, "CPU window is empty"));
    // Everything stays finite, so the JSON round-trips.
    let r = result_with(vec![record(0, s)]);
    assert_eq!(
        wirebench_model::result::RunResult::from_json(&print::json(&r)).unwrap(),
        r
    );
}

#[test]
fn cpu_bound_and_same_host_warnings() {
    let (spec, client, mut server) = forward_two();
    server.cpu = Some(cpu(4, 30.0, 99.0, S / 2, S));
    let s = summarize(&spec, &client, Some(&server), true);
    // CPU 3 at 99 % > 95 %, the server's threads 0.5 s / 1 s = 50 % ≥ 25 % of one CPU.
    let bound = Warning::CpuBound {
        host: HostRole::Server,
        cpu: 3,
        busy_pct: 99.0,
        threads_pct: 50.0,
    };
    assert!(has(&s, &bound), "{:?}", s.warnings);
    let text = sentence(bound);
    assert!(
        text.starts_with("CPU-bound: server CPU 3 at 99% busy")
            && text.ends_with("— the result measures the CPU, not the path"),
        "{text}"
    );
    assert_eq!(
        text,
        "CPU-bound: server CPU 3 at 99% busy (wirebench's data threads 50% of one CPU) — the \
         result measures the CPU, not the path"
    );
    // The client's CPU 3 is at 60 %.
    assert!(!has_where(&s, |w| matches!(
        w,
        Warning::CpuBound {
            host: HostRole::Client,
            ..
        }
    )));
    assert!(!says(&s, "CPU-bound: client"));
    assert!(s.same_host);
    assert!(has(&s, &Warning::SameHost));
    assert!(says(&s, "one machine"));
}

#[test]
fn warnings_and_flow_errors_are_carried_over() {
    let (spec, mut client, mut server) = forward_two();
    // The typed form of "flow 1: no EOF".
    let no_eof = Warning::DrainTruncated {
        thread: DataThread::Flow(1),
        drain_limit_ms: 2000,
    };
    client.warnings.push(no_eof.clone());
    let reset = FlowError {
        step: Step::Receive,
        cause: Cause::Os {
            error: OsError {
                errno: Some(104),
                message: "connection reset by peer".into(),
            },
        },
    };
    stream_mut(&mut server).flows[0].error = Some(reset.clone());
    let vanished = AbortReason::ControlLost {
        detail: "peer vanished".into(),
    };
    server.status = SideStatus::Aborted(vanished.clone());
    let s = summarize(&spec, &client, Some(&server), false);

    assert!(s
        .warnings
        .contains(&Noted::at(HostRole::Client, no_eof.clone())));
    assert!(
        says(
            &s,
            "client: the thread of flow 1 saw no end of data within 2000 ms after the stop"
        ),
        "{:?}",
        sentences(&s)
    );
    let failed = Warning::FlowFailed {
        flow: 0,
        host: HostRole::Server,
        error: reset.clone(),
    };
    assert!(has(&s, &failed), "{:?}", s.warnings);
    assert_eq!(
        sentence(failed),
        "flow 0 failed at the server: receiving: connection reset by peer"
    );
    let aborted = Warning::SideAborted {
        host: HostRole::Server,
        reason: vanished,
    };
    assert!(has(&s, &aborted));
    assert_eq!(
        sentence(aborted),
        "server: its part of the test was aborted: the control connection was lost: peer \
         vanished"
    );
    assert_eq!(
        stream_of(&s).flows[0].errors,
        vec![EndFlowError {
            host: HostRole::Server,
            error: reset,
        }]
    );
    // An aborted end makes no claim about unread bytes.
    assert!(!has_where(&s, |w| matches!(w, Warning::UnreadBytes { .. })));
}

#[test]
fn requested_congestion_mismatch_is_reported() {
    let (mut spec, client, server) = forward_two();
    stream_spec_mut(&mut spec).tcp.congestion = Some("bbr".into());
    let s = summarize(&spec, &client, Some(&server), false);
    for host in [HostRole::Client, HostRole::Server] {
        let w = Warning::CongestionMismatch {
            host,
            requested: "bbr".into(),
            in_use: "cubic".into(),
            flows: vec![0, 1],
        };
        assert!(has(&s, &w), "{:?}", s.warnings);
    }
    assert!(
        says(
            &s,
            "congestion control cubic is in use on flows 0, 1 although bbr was requested"
        ),
        "{:?}",
        sentences(&s)
    );
    // Asking for what runs is no mismatch.
    let (mut spec, client, server) = forward_two();
    stream_spec_mut(&mut spec).tcp.congestion = Some("cubic".into());
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
}

#[test]
fn paths_zerocopy_and_verify_are_joined_per_flow_and_summed_per_direction() {
    let (spec, mut client, mut server) = forward_two();
    let setup_failed = FallbackReason::SetupFailed {
        error: OsError {
            errno: Some(95),
            message: "operation not supported".into(),
        },
    };
    for (i, f) in stream_mut(&mut client).flows.iter_mut().enumerate() {
        if i == 0 {
            f.path = PathUsed::Send(SendPath::Zerocopy);
            f.zerocopy = Some(ZeroCopyStats {
                sends: 10,
                sends_completed_zerocopy: 3,
                sends_completed_copied: 7,
                // Receive-side fields of a sender are not taken.
                bytes_mapped: 999,
                ..ZeroCopyStats::default()
            });
        } else {
            f.path = PathUsed::Send(SendPath::Copy);
            f.path_fallback = Some(setup_failed.clone());
        }
    }
    for f in stream_mut(&mut server).flows.iter_mut() {
        f.path = PathUsed::Recv(RecvPath::Zerocopy);
        f.zerocopy = Some(ZeroCopyStats {
            bytes_mapped: 600_000_000,
            bytes_copied: 100_000_000,
            ..ZeroCopyStats::default()
        });
        f.verify = Some(VerifyCounts {
            verified_bytes: 700_000_000,
            mismatched_bytes: 0,
        });
    }
    let s = summarize(&spec, &client, Some(&server), false);
    let st = stream_of(&s);
    let f0 = &st.flows[0];
    assert_eq!(f0.send_path, Some(SendPath::Zerocopy));
    assert_eq!(f0.recv_path, Some(RecvPath::Zerocopy));
    assert!(f0.path_fallback.is_empty());
    let z = f0.zerocopy.as_ref().unwrap();
    assert_eq!(
        (
            z.sends,
            z.sends_completed_zerocopy,
            z.sends_completed_copied
        ),
        (10, 3, 7)
    );
    assert_eq!((z.bytes_mapped, z.bytes_copied), (600_000_000, 100_000_000));
    assert_eq!(f0.verified_bytes, Some(700_000_000));
    let f1 = &st.flows[1];
    assert_eq!(f1.send_path, Some(SendPath::Copy));
    assert_eq!(
        f1.path_fallback,
        vec![EndFallback {
            host: HostRole::Client,
            reason: setup_failed.clone(),
        }]
    );
    assert_eq!(
        print::text::fallback(&setup_failed),
        "setting it up failed: operation not supported"
    );
    let d = &st.directions[0];
    assert_eq!(d.send_paths, vec![SendPath::Zerocopy, SendPath::Copy]);
    assert_eq!(d.recv_paths, vec![RecvPath::Zerocopy]);
    assert_eq!(d.path_fallback_flows, 1);
    // Sends from flow 0's sender only; mapped/copied 2 × 600 MB / 2 × 100 MB from the receivers.
    let z = d.zerocopy.as_ref().unwrap();
    assert_eq!(
        (z.sends, z.bytes_mapped, z.bytes_copied),
        (10, 1_200_000_000, 200_000_000)
    );
    assert_eq!(
        (d.verified_bytes, d.verify_errors),
        (Some(1_400_000_000), Some(0))
    );

    let text = print::human(&result_with(vec![record(0, s)]));
    for needle in [
        "forward: paths: send zerocopy/copy, receive zerocopy (1 flow fell back to copy, see",
        "zero-copy sends 10: 3 completed without a copy, 7 copied by the kernel",
        "TCP_ZEROCOPY_RECEIVE 1200000000 bytes mapped, 200000000 copied",
        "verified 1400000000 bytes, 0 differed",
    ] {
        assert!(
            text.replace("\n  ", " ").contains(needle),
            "missing {needle:?} in:\n{text}"
        );
    }
    assert_narrow(&text);

    // Reports on the copy paths without zero-copy or verification figures: the paths line
    // names the paths and invents nothing else.
    let (spec, client, server) = forward_two();
    let s = summarize(&spec, &client, Some(&server), false);
    let d = &stream_of(&s).directions[0];
    assert_eq!(
        (d.send_paths.as_slice(), d.recv_paths.as_slice()),
        ([SendPath::Copy].as_slice(), [RecvPath::Copy].as_slice())
    );
    assert!(d.zerocopy.is_none());
    assert_eq!((d.verified_bytes, d.verify_errors), (None, None));
    assert_eq!(d.path_fallback_flows, 0);
    let text = print::human(&result_with(vec![record(0, s)]));
    let paths: Vec<&str> = text.lines().filter(|l| l.contains("paths:")).collect();
    assert_eq!(
        paths,
        vec!["forward: paths: send copy, receive copy"],
        "{text}"
    );
}

#[test]
fn receive_waits_are_summed_over_the_receivers_and_printed() {
    let (spec, client, mut server) = forward_two();
    for (i, f) in stream_mut(&mut server).flows.iter_mut().enumerate() {
        let i = i as u64;
        f.recv_wait = Some(RecvWaitStats {
            asked: RecvWait::Auto,
            recv_calls: 1000 + i,
            empty_polls: 300,
            naps: 290 + i,
            nap_ns: 30_000_000,
            blocking_waits: 1,
            small_buffer_calls: 64,
            large_calls: 7,
            epoll_workers: 0,
        });
    }
    let s = summarize(&spec, &client, Some(&server), false);
    let w = stream_of(&s).directions[0]
        .recv_wait
        .clone()
        .expect("summed");
    assert_eq!(w.asked, RecvWait::Auto);
    assert_eq!(
        (w.recv_calls, w.empty_polls, w.naps, w.nap_ns),
        (2001, 600, 581, 60_000_000)
    );
    assert_eq!(
        (w.blocking_waits, w.small_buffer_calls, w.large_calls),
        (2, 128, 14)
    );
    let text = print::human(&result_with(vec![record(0, s)])).replace("\n  ", " ");
    let needle = "forward: receive wait auto: 2001 receive calls; 600 zero-timeout polls found \
                  nothing to read; 581 naps on the receivers' own timers (60.0 ms in all); 2 \
                  calls blocked after waiting that way; 128 calls blocked without a check \
                  (receive buffer below 1536K); 14 calls blocked without a check (calls above \
                  512K)";
    assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    // Without reports from the receivers there is no line, and nothing is invented.
    let (spec, client, server) = forward_two();
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(stream_of(&s).directions[0].recv_wait.is_none());
    let text = print::human(&result_with(vec![record(0, s)]));
    assert!(!text.contains("receive wait"), "{text}");
}

#[test]
fn the_epoll_workers_waits_count_for_the_direction_they_received() {
    let (spec, client, mut server) = forward_two();
    let worker = |calls: u64| RecvWaitStats {
        asked: RecvWait::Auto,
        recv_calls: calls,
        empty_polls: 50,
        naps: 40,
        nap_ns: 4_000_000,
        blocking_waits: 10,
        small_buffer_calls: 3,
        large_calls: 0,
        epoll_workers: 1,
    };
    stream_mut(&mut server).worker_waits = vec![worker(500), worker(700)];
    // The client's workers (it only sent) would be none; a stray record there is not the
    // forward direction's.
    let mut client = client;
    stream_mut(&mut client).worker_waits = vec![worker(1)];
    let s = summarize(&spec, &client, Some(&server), false);
    let w = stream_of(&s).directions[0]
        .recv_wait
        .clone()
        .expect("summed");
    assert_eq!(
        (
            w.recv_calls,
            w.empty_polls,
            w.naps,
            w.blocking_waits,
            w.epoll_workers
        ),
        (1200, 100, 80, 20, 2)
    );
    let text = print::human(&result_with(vec![record(0, s)])).replace("\n  ", " ");
    let needle = "forward: receive wait auto (2 epoll workers): 1200 receive calls; 100 \
                  zero-timeout epoll_waits found nothing to read; 80 naps on the workers' own \
                  timers (8.0 ms in all); 20 epoll_waits blocked after waiting that way; 6 \
                  epoll_waits blocked without a check (the workers' receive buffers summed \
                  below 1536K)";
    assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
}

#[test]
fn missing_flow_and_unexpected_flow_are_reported() {
    // The server lacks flow 1 and reports a flow 7 the spec does not have.
    let (spec, client, mut server) = forward_two();
    let extra = flow_side(7, FlowDir::ClientToServer, Role::Receiver, 10, 10, S, 2 * S);
    let flows = &mut stream_mut(&mut server).flows;
    flows.truncate(1);
    flows.push(extra);
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(has(
        &s,
        &Warning::MissingFlowFigures {
            flow: 1,
            host: HostRole::Server,
            role: Role::Receiver,
        }
    ));
    assert!(has(
        &s,
        &Warning::UnexpectedFlow {
            host: HostRole::Server,
            flow: 7,
        }
    ));
    assert_eq!(
        sentence(Warning::MissingFlowFigures {
            flow: 1,
            host: HostRole::Server,
            role: Role::Receiver,
        }),
        "flow 1: the receiver (server) reported no figures; they are 0"
    );
    let st = stream_of(&s);
    // Flow 7 is kept (as the report has it) after flows 0 and 1.
    let ids: Vec<u32> = st.flows.iter().map(|f| f.flow).collect();
    assert_eq!(ids, vec![0, 1, 7]);
    assert_eq!(st.flows[1].receiver_bytes, 0);
    // Receivers: flow 0 (625 MB) and flow 7 (10 B) over [1 s, 2 s].
    assert_eq!(st.directions[0].receiver_bytes, 625_000_010);
    assert_eq!(st.directions[0].flows, 3);
}

#[test]
fn cpu_not_measured_is_carried_with_its_end() {
    let (spec, mut client, server) = forward_two();
    client.cpu = None;
    client.warnings.push(Warning::CpuNotMeasured {
        reason: CpuUnmeasured::ProcStatUnreadable,
    });
    let s = summarize(&spec, &client, Some(&server), false);
    assert_eq!(s.cpu.len(), 1);
    assert_eq!(s.cpu[0].host, HostRole::Server);
    assert!(sentences(&s)
        .contains(&"client: CPU was not measured: /proc/stat could not be read".to_string()));
    assert!(has(
        &s,
        &Warning::NoCpuFigures {
            host: HostRole::Client
        }
    ));
}

/// `-w` above an end's rmem_max/wmem_max: a warning per end that capped it, naming both
/// sysctls; none at or below them.
#[test]
fn window_above_the_kernel_maximum_is_reported_per_end() {
    let (mut spec, mut client, mut server) = forward_two();
    spec.common.window_bytes = Some(64 << 20);
    client.env.rmem_max_bytes = Some(4 << 20);
    client.env.wmem_max_bytes = Some(4 << 20);
    server.env.rmem_max_bytes = Some(128 << 20);
    server.env.wmem_max_bytes = Some(128 << 20);
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(has(
        &s,
        &Warning::WindowCapped {
            host: HostRole::Client,
            requested_bytes: 64 << 20,
            rmem_max_bytes: Some(4 << 20),
            wmem_max_bytes: Some(4 << 20),
        }
    ));
    assert!(!has_where(&s, |w| matches!(
        w,
        Warning::WindowCapped {
            host: HostRole::Server,
            ..
        }
    )));
    assert!(says(
        &s,
        "client: -w 67108864 bytes is above what the kernel allows"
    ));
    spec.common.window_bytes = Some(4 << 20);
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(!has_where(&s, |w| matches!(
        w,
        Warning::WindowCapped { .. }
    )));
}
