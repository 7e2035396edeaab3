//! The builders the analysis tests and the printers' tests share: hand-built side reports,
//! results and sweeps. Every figure a test expects is computed by hand in a comment next to
//! it.
//!
//! wirebench-report's tests include this file too (by path), so its builders name the
//! analysis as `wirebench_analysis`.

pub(crate) use wirebench_model::limits::{Batch, LimitsResult, MemoryRow, LIMITS_SCHEMA_VERSION};
pub(crate) use wirebench_model::result::{
    iso8601_utc, RunRecord, RunResult, RunStatus, Summary, WorkloadSummary, SCHEMA_VERSION,
};
pub(crate) use wirebench_model::rr::{RrCounts, RrFlowSide, RrRole, RrSide};
pub(crate) use wirebench_model::side::{
    ByteInterval, CpuReport, Environment, FlowBytes, FlowSide, HostRole, PathUsed, Role, SideData,
    SideReport, SideStatus, SocketFacts, Span, StreamSide, TcpInfoReport,
};
pub(crate) use wirebench_model::spec::{
    Direction, FlowDir, RecvPath, RrSpec, SendPath, StreamSpec, TestSpec, WorkloadKind,
    WorkloadSpec,
};
pub(crate) use wirebench_model::sweep::{
    Factor, FactorName, FactorValue, PointFigure, PointRole, Setting, SweepPoint, SweepResult,
    SweepStatus,
};
pub(crate) use wirebench_model::udp::{
    UdpHostDrops, UdpInvalidCounts, UdpRecvReport, UdpRecvSocketReport, UdpSendReport, UdpSide,
};
pub(crate) use wirebench_model::warning::Warning;
pub(crate) use wirebench_stats::cpu::{CpuBreakdown, SystemCpuUtil};
pub(crate) use wirebench_stats::latency::LatencySummary;
pub(crate) use wirebench_stats::summary::Spread;

pub(crate) use wirebench_analysis::summarize;

/// One second, ns.
pub(crate) const S: u64 = 1_000_000_000;

/// The instant every hand-built result starts at: 2023-11-14T22:13:20.000Z.
pub(crate) const STARTED_UNIX_MS: u64 = 1_700_000_000_000;

// ───── comparisons and warnings ─────

/// `a` and `b` equal up to floating-point rounding.
pub(crate) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// True if `w` is among the summary's warnings, whichever end raised it.
pub(crate) fn has(s: &Summary, w: &Warning) -> bool {
    s.warnings.iter().any(|n| &n.warning == w)
}

/// True if a warning matching `pred` is among the summary's warnings.
pub(crate) fn has_where(s: &Summary, pred: impl Fn(&Warning) -> bool) -> bool {
    s.warnings.iter().any(|n| pred(&n.warning))
}

/// `text` with the wrapped lines joined again (a line break and its indent become a space).
pub(crate) fn unwrapped(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(t);
    }
    out
}

/// Every needle is in `text`.
pub(crate) fn assert_contains(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

// ───── specs ─────

/// A stream spec (128 KiB calls, 10 s, no warm-up) with `flows` flows per direction.
pub(crate) fn stream_spec(direction: Direction, flows: u32) -> TestSpec {
    let mut s = TestSpec::new(WorkloadSpec::Stream(StreamSpec {
        direction,
        ..StreamSpec::default()
    }));
    s.common.flows = flows;
    s
}

/// The stream settings of a stream spec.
pub(crate) fn stream_spec_mut(s: &mut TestSpec) -> &mut StreamSpec {
    let WorkloadSpec::Stream(x) = &mut s.workload else {
        unreachable!("a stream spec")
    };
    x
}

/// `spec` with `flows` flows.
pub(crate) fn with_flows(mut spec: TestSpec, flows: u32) -> TestSpec {
    spec.common.flows = flows;
    spec
}

// ───── CPU ─────

/// A breakdown `busy` % busy: half user, a quarter system, a quarter softirq.
pub(crate) fn breakdown(busy: f64) -> CpuBreakdown {
    CpuBreakdown {
        user_pct: busy / 2.0,
        system_pct: busy / 4.0,
        irq_pct: 0.0,
        softirq_pct: busy / 4.0,
        steal_pct: 0.0,
        idle_pct: 100.0 - busy,
        busy_pct: busy,
        unattributed_pct: 0.0,
    }
}

/// A CPU report over `[S, S + window_ns]`: `cpus` CPUs `total_busy` % busy together, CPU 3
/// the busiest at `busiest_busy` %, CPU 0 at `total_busy` %; this end's threads used
/// `threads_ns` (a quarter user, the rest system); the CPUs used are unknown (so every CPU
/// counts).
pub(crate) fn cpu(
    cpus: u32,
    total_busy: f64,
    busiest_busy: f64,
    threads_ns: u64,
    window_ns: u64,
) -> CpuReport {
    CpuReport {
        window: Span {
            start_ns: S,
            end_ns: S + window_ns,
        },
        system: SystemCpuUtil {
            cpus,
            total: breakdown(total_busy),
            per_cpu: vec![(0, breakdown(total_busy)), (3, breakdown(busiest_busy))],
            busiest_cpu: 3,
            busiest: breakdown(busiest_busy),
            window_ticks: 100,
        },
        threads_user_ns: threads_ns / 4,
        threads_system_ns: threads_ns - threads_ns / 4,
        threads_run_delay_ns: None,
        cpus_used: Vec::new(),
        other_processes_ns: None,
        other_processes: Vec::new(),
    }
}

// ───── reports ─────

/// A completed report of `host` with `data`, `cpu`, no warnings and no engine; its window
/// opened at 1 s.
pub(crate) fn report(host: HostRole, data: Option<SideData>, cpu: Option<CpuReport>) -> SideReport {
    SideReport {
        host,
        status: SideStatus::Completed,
        window: Some(Span {
            start_ns: S,
            end_ns: 3 * S,
        }),
        data,
        cpu,
        env: Environment::default(),
        warnings: Vec::new(),
        engine: None,
        profile: None,
        buffer_offset_bytes: None,
    }
}

// ───── stream ─────

/// TCP_INFO of a connection with `retransmits` retransmitted segments, RTT 40 µs, cwnd 100,
/// MSS 1448, PMTU 1500.
pub(crate) fn tcp_info(retransmits: u32) -> TcpInfoReport {
    TcpInfoReport {
        retransmits_total: retransmits,
        rtt_us: 40,
        snd_cwnd_segments: 100,
        snd_mss_bytes: 1448,
        pmtu_bytes: 1500,
        ..TcpInfoReport::default()
    }
}

/// One stream flow at one end over the window `[start, end]`, on the copy path: a sender
/// reports SO_SNDBUF 2 626 560 and 3 retransmits, a receiver SO_RCVBUF 131 072 and none;
/// both run cubic over a 1500-byte PMTU.
pub(crate) fn flow_side(
    flow: u32,
    dir: FlowDir,
    role: Role,
    total_bytes: u64,
    window_bytes: u64,
    window_start_ns: u64,
    window_end_ns: u64,
) -> FlowSide {
    FlowSide {
        flow,
        dir,
        role,
        total_bytes,
        window_bytes,
        window: Span {
            start_ns: window_start_ns,
            end_ns: window_end_ns,
        },
        socket: SocketFacts {
            local: Some("10.0.0.2:5301".into()),
            peer: Some("10.0.0.1:40000".into()),
            sndbuf_bytes: (role == Role::Sender).then_some(2_626_560),
            rcvbuf_bytes: (role == Role::Receiver).then_some(131_072),
            congestion: Some("cubic".into()),
            pmtu_bytes: Some(1500),
            tcp_info: Some(tcp_info(if role == Role::Sender { 3 } else { 0 })),
            notsent_lowat_bytes: None,
        },
        error: None,
        path: match role {
            Role::Sender => PathUsed::Send(SendPath::Copy),
            Role::Receiver => PathUsed::Recv(RecvPath::Copy),
        },
        path_fallback: None,
        zerocopy: None,
        verify: None,
        recv_wait: None,
    }
}

/// A stream report of `host` with `flows` and no intervals.
pub(crate) fn stream_report(
    host: HostRole,
    flows: Vec<FlowSide>,
    cpu: Option<CpuReport>,
) -> SideReport {
    report(
        host,
        Some(SideData::Stream(StreamSide {
            flows,
            intervals: Vec::new(),
            worker_waits: Vec::new(),
        })),
        cpu,
    )
}

/// The stream counts of a stream report.
pub(crate) fn stream_mut(r: &mut SideReport) -> &mut StreamSide {
    match &mut r.data {
        Some(SideData::Stream(s)) => s,
        _ => unreachable!("a stream report"),
    }
}

/// A stream interval sample over `[start, end]` with `(flow, role, bytes)` entries.
pub(crate) fn byte_interval(
    index: u32,
    start_ns: u64,
    end_ns: u64,
    in_warmup: bool,
    flows: &[(u32, Role, u64)],
) -> ByteInterval {
    ByteInterval {
        index,
        span: Span { start_ns, end_ns },
        in_warmup,
        flows: flows
            .iter()
            .map(|&(flow, role, bytes)| FlowBytes { flow, role, bytes })
            .collect(),
        tcp: Vec::new(),
    }
}

/// Forward, 2 flows, 625 MB each over a 1 s window at both ends: 10 Gbit/s in total. Both
/// ends wrote/read 700 MB per flow over the whole test. Client CPU: 4 CPUs 25 % busy (CPU 3
/// at 60 %), threads 0.5 s; server: 30 % (CPU 3 at 70 %), threads 0.5 s. The server samples
/// a warm-up interval (75 MB per flow) and a window interval (625 MB per flow).
pub(crate) fn forward_two() -> (TestSpec, SideReport, SideReport) {
    let spec = stream_spec(Direction::Forward, 2);
    let c2s = FlowDir::ClientToServer;
    let client = stream_report(
        HostRole::Client,
        vec![
            flow_side(0, c2s, Role::Sender, 700_000_000, 625_000_000, S, 2 * S),
            flow_side(1, c2s, Role::Sender, 700_000_000, 625_000_000, S, 2 * S),
        ],
        Some(cpu(4, 25.0, 60.0, S / 2, S)),
    );
    let mut server = stream_report(
        HostRole::Server,
        vec![
            flow_side(0, c2s, Role::Receiver, 700_000_000, 625_000_000, S, 2 * S),
            flow_side(1, c2s, Role::Receiver, 700_000_000, 625_000_000, S, 2 * S),
        ],
        Some(cpu(4, 30.0, 70.0, S / 2, S)),
    );
    let rx = Role::Receiver;
    stream_mut(&mut server).intervals = vec![
        byte_interval(0, 0, S, true, &[(0, rx, 75_000_000), (1, rx, 75_000_000)]),
        byte_interval(
            1,
            S,
            2 * S,
            false,
            &[(0, rx, 625_000_000), (1, rx, 625_000_000)],
        ),
    ];
    (spec, client, server)
}

/// The stream figures of a summary.
pub(crate) fn stream_of(s: &Summary) -> &wirebench_model::result::StreamSummary {
    s.stream().expect("a stream summary")
}

// ───── request/response ─────

/// Counts with `transactions` and nothing else.
pub(crate) fn tx(transactions: u64) -> RrCounts {
    RrCounts {
        transactions,
        ..RrCounts::default()
    }
}

/// A latency summary with the given median and 99th percentile; the other figures derived
/// from them (min = p50/2, mean = p50 + 500, p90 = p50 + 1000, p99.9 = 2·p99, p99.99 =
/// 3·p99, max = 4·p99).
pub(crate) fn latency(count: u64, p50_ns: u64, p99_ns: u64) -> LatencySummary {
    LatencySummary {
        count,
        clamped: 0,
        min_ns: p50_ns / 2,
        mean_ns: (p50_ns + 500) as f64,
        stddev_ns: 1_500.0,
        p50_ns,
        p90_ns: p50_ns + 1_000,
        p99_ns,
        p999_ns: 2 * p99_ns,
        p9999_ns: 3 * p99_ns,
        max_ns: 4 * p99_ns,
    }
}

/// One request/response flow at one end: `window` counts, `total` counts, and (client) its
/// latency.
pub(crate) fn rr_flow(
    flow: u32,
    window: RrCounts,
    total: RrCounts,
    latency: Option<LatencySummary>,
) -> RrFlowSide {
    RrFlowSide {
        flow,
        window,
        total,
        latency,
        open_loop: None,
        tcp_info: None,
        congestion: None,
        error: None,
        local: None,
        peer: None,
        busy_poll: None,
    }
}

/// A request/response report of `host` over the window `[start, end]`.
pub(crate) fn rr_report(
    host: HostRole,
    window: (u64, u64),
    flows: Vec<RrFlowSide>,
    latency: Option<LatencySummary>,
    cpu: Option<CpuReport>,
) -> SideReport {
    let role = match host {
        HostRole::Client => RrRole::Client,
        HostRole::Server => RrRole::Server,
    };
    report(
        host,
        Some(SideData::Rr(RrSide {
            role,
            close_mode: None,
            window: Span {
                start_ns: window.0,
                end_ns: window.1,
            },
            flows,
            latency,
            latency_histogram: None,
            intervals: Vec::new(),
        })),
        cpu,
    )
}

/// The request/response counts of a report.
pub(crate) fn rr_mut(r: &mut SideReport) -> &mut RrSide {
    match &mut r.data {
        Some(SideData::Rr(s)) => s,
        _ => unreachable!("a request/response report"),
    }
}

/// The request/response figures of a summary.
pub(crate) fn rr_of(s: &Summary) -> &wirebench_model::result::RrSummary {
    s.rr().expect("a request/response summary")
}

// ───── UDP stream ─────

/// A UDP sender report over the window `[start, end]`: `window_sent` datagrams of
/// `datagram_bytes` inside it, `total_sent` over the whole test, nothing refused or failed.
pub(crate) fn udp_sender(
    flow: u32,
    datagram_bytes: u32,
    window: (u64, u64),
    window_sent: u64,
    total_sent: u64,
) -> UdpSendReport {
    UdpSendReport {
        flow,
        datagram_bytes,
        target_rate_bps: Some(8_000_000),
        datagrams_sent: total_sent,
        bytes_sent: total_sent * u64::from(datagram_bytes),
        window_datagrams_sent: window_sent,
        window_bytes_sent: window_sent * u64::from(datagram_bytes),
        window: Span {
            start_ns: window.0,
            end_ns: window.1,
        },
        send_refused: 0,
        send_errors: 0,
        pacing_resets: 0,
        error: None,
        local: None,
        peer: None,
    }
}

/// A UDP receiver report: `window_received` distinct window datagrams of `datagram_bytes`,
/// `total_received` over the whole test, all in order, no jitter.
pub(crate) fn udp_receiver(
    flow: u32,
    datagram_bytes: u32,
    window_received: u64,
    total_received: u64,
) -> UdpRecvReport {
    UdpRecvReport {
        flow,
        datagrams_received: total_received,
        bytes_received: total_received * u64::from(datagram_bytes),
        window_datagrams_received: window_received,
        window_bytes_received: window_received * u64::from(datagram_bytes),
        sender_window: Span {
            start_ns: S,
            end_ns: 3 * S,
        },
        window_first_arrival_ns: None,
        window_last_arrival_ns: None,
        in_order: total_received,
        late: 0,
        duplicate: 0,
        too_old: 0,
        highest_seq: total_received.checked_sub(1),
        jitter_ns: 0.0,
        reorder_window_seqs: 1024,
        error: None,
        local: None,
        peer: None,
    }
}

/// A UDP stream report of `host`.
pub(crate) fn udp_report(host: HostRole, side: UdpSide, cpu: Option<CpuReport>) -> SideReport {
    report(host, Some(SideData::UdpStream(side)), cpu)
}

/// The UDP counts of a report.
pub(crate) fn udp_mut(r: &mut SideReport) -> &mut UdpSide {
    match &mut r.data {
        Some(SideData::UdpStream(u)) => u,
        _ => unreachable!("a UDP report"),
    }
}

/// The UDP figures of a summary.
pub(crate) fn udp_of(s: &Summary) -> &wirebench_model::result::UdpSummary {
    s.udp().expect("a UDP summary")
}

// ───── results ─────

/// A completed run with `summary` and no raw reports.
pub(crate) fn record(index: u32, summary: Summary) -> RunRecord {
    RunRecord {
        index,
        status: RunStatus::Completed,
        client: None,
        server: None,
        summary: Some(summary),
        iperf3: None,
    }
}

/// A completed result of `spec` with `runs`, an embedded server at 127.0.0.1:5301.
pub(crate) fn result_for(spec: TestSpec, runs: Vec<RunRecord>) -> RunResult {
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool: "wirebench 0.1.0".into(),
        title: None,
        command: Vec::new(),
        started_unix_ms: STARTED_UNIX_MS,
        started_utc: iso8601_utc(STARTED_UNIX_MS),
        status: RunStatus::Completed,
        spec: Some(spec),
        server_address: Some("127.0.0.1:5301".into()),
        embedded_server: true,
        runs,
        aggregate: None,
        warnings: Vec::new(),
        error: None,
        under_load: None,
        testbed: None,
        physical: None,
        profile_cost: None,
    }
}

/// [`result_for`] the spec of [`forward_two`].
pub(crate) fn result_with(runs: Vec<RunRecord>) -> RunResult {
    result_for(stream_spec(Direction::Forward, 2), runs)
}

/// Runs of [`forward_two`] whose total throughput is `tps[i]` (bit/s); CPU 25 % / 30 %.
pub(crate) fn runs_with(tps: &[f64]) -> Vec<RunRecord> {
    let (spec, client, server) = forward_two();
    tps.iter()
        .enumerate()
        .map(|(i, &tp)| {
            let mut s = summarize(&spec, &client, Some(&server), false);
            match &mut s.workload {
                WorkloadSummary::Stream(st) => st.directions[0].receiver_throughput_bps = tp,
                _ => unreachable!("a stream summary"),
            }
            record(u32::try_from(i).unwrap(), s)
        })
        .collect()
}

// ───── fixtures of the other workloads ─────

/// TCP RR, 2 flows, 1-byte messages, closed loop (burst 1), 2 s measured after 1 s of
/// warm-up. The client's window is `[1 s, 3 s]`: flow 0 completed 30 000 transactions in it
/// (31 000 over the whole test; median 24 µs, p99 60 µs), flow 1 10 000 (11 000; 40 µs,
/// 90 µs); merged latency median 28 µs, p99 80 µs. The server answered 31 000 and 11 000.
/// Both ends run cubic. Client CPU: 2 CPUs 50 % busy, threads 1 s of 2 s; server: 25 %,
/// threads 0.5 s.
pub(crate) fn tcp_rr_two() -> (TestSpec, SideReport, SideReport) {
    let mut spec = with_flows(
        TestSpec::new(WorkloadSpec::Rr(wirebench_model::spec::RrSpec::default())),
        2,
    );
    spec.common.duration_ms = 2000;
    spec.common.warmup_ms = 1000;
    let mut client = rr_report(
        HostRole::Client,
        (S, 3 * S),
        vec![
            rr_flow(
                0,
                tx(30_000),
                tx(31_000),
                Some(latency(30_000, 24_000, 60_000)),
            ),
            rr_flow(
                1,
                tx(10_000),
                tx(11_000),
                Some(latency(10_000, 40_000, 90_000)),
            ),
        ],
        Some(latency(40_000, 28_000, 80_000)),
        Some(cpu(2, 50.0, 50.0, S, 2 * S)),
    );
    let mut server = rr_report(
        HostRole::Server,
        (S, 3 * S),
        vec![
            rr_flow(0, tx(30_000), tx(31_000), None),
            rr_flow(1, tx(10_000), tx(11_000), None),
        ],
        None,
        Some(cpu(2, 25.0, 40.0, S / 2, 2 * S)),
    );
    for r in [&mut client, &mut server] {
        for f in &mut rr_mut(r).flows {
            f.congestion = Some("cubic".into());
        }
    }
    (spec, client, server)
}

/// A UDP stream spec: `direction`, `flows` flows per direction of 1000-byte datagrams at
/// 8 Mbit/s, 2 s measured after 1 s of warm-up.
pub(crate) fn udp_spec(direction: Direction, flows: u32) -> TestSpec {
    let mut spec = with_flows(
        TestSpec::new(WorkloadSpec::UdpStream(
            wirebench_model::spec::UdpStreamSpec {
                direction,
                datagram_bytes: 1000,
                rate_bps: Some(8_000_000),
            },
        )),
        flows,
    );
    spec.common.duration_ms = 2000;
    spec.common.warmup_ms = 1000;
    spec
}

/// UDP forward, 1 flow of 1000-byte datagrams; the sender's window is `[1 s, 3 s]`.
///
/// - Client (sender): 2000 datagrams sent in the window, 2500 over the whole test; 10 sends
///   refused (ENOBUFS), 2 failed.
/// - Server (receiver): 1950 window datagrams, 2440 over the whole test; 5 late, 3
///   duplicates, 1 too old; jitter 12 345 ns. Its one socket overflowed 20 times and saw 10
///   invalid datagrams (1 too short, 2 bad magic, 3 foreign flow, 4 foreign source); the
///   host's `InErrors` grew by 35, `RcvbufErrors` by 20. It sampled one interval [1 s,
///   2 s]: 990 datagrams (2 late, 1 duplicate) of the 1000 sequence numbers covered, 10
///   lost, jitter 12 000 ns at its end.
/// - CPU: client 4 CPUs 10 % busy, threads 0.1 s; server 12 %, threads 0.2 s; both over
///   2 s.
pub(crate) fn udp_forward_one() -> (TestSpec, SideReport, SideReport) {
    use wirebench_model::udp::{UdpFlowInterval, UdpInterval};
    let spec = udp_spec(Direction::Forward, 1);
    let mut snd = udp_sender(0, 1000, (S, 3 * S), 2000, 2500);
    snd.send_refused = 10;
    snd.send_errors = 2;
    let client = udp_report(
        HostRole::Client,
        UdpSide {
            senders: vec![snd],
            receivers: Vec::new(),
            sockets: Vec::new(),
            intervals: Vec::new(),
            host_drops: None,
        },
        Some(cpu(4, 10.0, 20.0, S / 10, 2 * S)),
    );
    let mut rcv = udp_receiver(0, 1000, 1950, 2440);
    rcv.late = 5;
    rcv.duplicate = 3;
    rcv.too_old = 1;
    rcv.jitter_ns = 12_345.0;
    let server = udp_report(
        HostRole::Server,
        UdpSide {
            senders: Vec::new(),
            receivers: vec![rcv],
            sockets: vec![UdpRecvSocketReport {
                flows: vec![0],
                invalid: UdpInvalidCounts {
                    too_short: 1,
                    bad_magic: 2,
                    foreign_flow: 3,
                    foreign_source: 4,
                },
                rcvbuf_drops: Some(20),
                error: None,
            }],
            intervals: vec![UdpInterval {
                index: 1,
                span: Span {
                    start_ns: S,
                    end_ns: 2 * S,
                },
                in_warmup: false,
                flows: vec![UdpFlowInterval {
                    flow: 0,
                    role: Role::Receiver,
                    datagrams: 990,
                    bytes: 990_000,
                    send_errors: 0,
                    late: 2,
                    duplicate: 1,
                    expected: 1000,
                    lost: 10,
                    jitter_ns: Some(12_000),
                }],
            }],
            host_drops: Some(UdpHostDrops {
                rcvbuf_errors: 20,
                in_errors: 35,
            }),
        },
        Some(cpu(4, 12.0, 30.0, S / 5, 2 * S)),
    );
    (spec, client, server)
}

// ───── sweeps ─────

/// A completed result with no spec and no runs (a sweep point's placeholder).
fn empty_result() -> RunResult {
    RunResult {
        schema_version: 3,
        tool: "t".into(),
        title: None,
        command: Vec::new(),
        started_unix_ms: 0,
        started_utc: String::new(),
        status: wirebench_model::result::RunStatus::Completed,
        spec: None,
        server_address: None,
        embedded_server: true,
        runs: vec![],
        aggregate: None,
        warnings: vec![],
        error: None,
        under_load: None,
        testbed: None,
        physical: None,
        profile_cost: None,
    }
}

/// A stream sweep point `index` at message size `size` with throughput `bps`.
pub(crate) fn stream_point(index: u32, size: u64, bps: f64, role: PointRole) -> SweepPoint {
    SweepPoint {
        index,
        role,
        settings: vec![Setting {
            factor: FactorName::MsgSize,
            value: FactorValue::Number(size),
        }],
        duration_ms: 500,
        figure: Some(PointFigure::Throughput {
            throughput_bps: bps,
            stddev_bps: None,
        }),
        result: empty_result(),
    }
}

/// A completed message-size sweep of `test` with `points`.
pub(crate) fn sweep(points: Vec<SweepPoint>, test: WorkloadKind) -> SweepResult {
    SweepResult {
        schema_version: 1,
        kind: "sweep".into(),
        software: "t".into(),
        test,
        command: vec![],
        factors: vec![Factor {
            name: FactorName::MsgSize,
            values: vec![FactorValue::Number(1), FactorValue::Number(2)],
            given: "1..2".into(),
        }],
        started_unix_ms: 0,
        started_utc: String::new(),
        ended_unix_ms: 0,
        status: SweepStatus::Completed,
        error: None,
        points,
        analysis: vec![],
    }
}

// ───── limits ─────

/// A batch of `count` units in `ms` milliseconds.
pub(crate) fn b(count: u64, ms: u64) -> Batch {
    Batch {
        count,
        elapsed_ns: ms * 1_000_000,
    }
}

/// A spread whose every statistic is `x`.
pub(crate) fn flat(x: f64) -> Spread {
    Spread {
        n: 5,
        min: x,
        median: x,
        mean: x,
        max: x,
    }
}

/// Limits of boot "b00t" on 2 CPUs: copy 40 GB/s (1 thread) and 60 GB/s (2 threads) at
/// 128 KiB, 32 and 50 at 1 MiB; 256 MiB measured on one thread only.
pub(crate) fn limits() -> LimitsResult {
    let row = |bytes: u64, one: f64, all: Option<f64>| MemoryRow {
        buffer_bytes: bytes,
        copy_one_thread_bytes_per_s: Some(flat(one)),
        copy_all_threads_bytes_per_s: all.map(flat),
        checksum_bytes_per_s: Some(flat(20e9)),
        copy_unlucky_bytes_per_s: None,
    };
    LimitsResult {
        schema_version: LIMITS_SCHEMA_VERSION,
        kind: "limits".into(),
        tool: "wirebench 0.1.0".into(),
        started_unix_ms: STARTED_UNIX_MS,
        started_utc: iso8601_utc(STARTED_UNIX_MS),
        duration_ms: 7_000,
        boot_id: Some("b00t".into()),
        hostname: Some("h".into()),
        cpu_model: Some("Some CPU".into()),
        cpus: 2,
        cpus_used: vec![0, 1],
        kernel: Some("6.1.0".into()),
        load_average_1m: Some(0.2),
        load: None,
        quick: false,
        memory: vec![
            row(128 << 10, 40e9, Some(60e9)),
            row(1 << 20, 32e9, Some(50e9)),
            row(256 << 20, 8e9, None),
        ],
        syscall: None,
        wakeup: None,
        loopback: None,
        transfer: None,
        notes: vec![],
        implausible: vec![],
        sampler: None,
    }
}

/// A completed result of `spec` whose one direction received `bps`, from [`runs_with`].
pub(crate) fn stream_result(spec: TestSpec, bps: f64) -> RunResult {
    let mut r = result_for(spec, runs_with(&[bps]));
    let WorkloadSummary::Stream(s) = &mut r.runs[0].summary.as_mut().unwrap().workload else {
        unreachable!()
    };
    s.directions[0].send_paths = vec![SendPath::Copy];
    s.directions[0].recv_paths = vec![RecvPath::Copy];
    r
}

/// A forward stream spec of one flow.
pub(crate) fn one_flow() -> TestSpec {
    stream_spec(Direction::Forward, 1)
}

/// The TCP RR part of a spec.
pub(crate) fn rr_spec_mut(s: &mut TestSpec) -> &mut RrSpec {
    let WorkloadSpec::Rr(r) = &mut s.workload else {
        unreachable!("a TCP RR spec")
    };
    r
}

/// A receiving end with sockets that overflowed `drops` times each and the host counters.
pub(crate) fn receiving(drops: &[Option<u64>], host: Option<(u64, u64)>) -> UdpSide {
    UdpSide {
        senders: Vec::new(),
        receivers: Vec::new(),
        sockets: drops
            .iter()
            .enumerate()
            .map(|(i, &d)| UdpRecvSocketReport {
                flows: vec![u32::try_from(i).unwrap()],
                invalid: UdpInvalidCounts::default(),
                rcvbuf_drops: d,
                error: None,
            })
            .collect(),
        intervals: Vec::new(),
        host_drops: host.map(|(rcvbuf_errors, in_errors)| UdpHostDrops {
            rcvbuf_errors,
            in_errors,
        }),
    }
}
