//! Unit tests of the analysis and the printers, with hand-built reports.

use wirebench_proto::measure::{
    CpuReport, Environment, FlowInterval, FlowSide, HostRole, IntervalSample, Role, SideReport,
    SideStatus, TcpInfoReport,
};
use wirebench_proto::spec::{Direction, FlowDir, TestSpec};
use wirebench_stats::ci::ConfidenceLevel;
use wirebench_stats::cpu::{CpuBreakdown, SystemCpuUtil};

use crate::analyze::{aggregate, interval_rows, summarize};
use crate::print;
use crate::schema::{ErrorInfo, RunRecord, RunResult, RunStatus, Summary, SCHEMA_VERSION};
use crate::ReportError;

const S: u64 = 1_000_000_000;

fn spec(direction: Direction, flows: u32) -> TestSpec {
    TestSpec {
        direction,
        flows,
        ..TestSpec::stream_default()
    }
}

fn tcp_info(retransmits: u32) -> TcpInfoReport {
    TcpInfoReport {
        retransmits_total: retransmits,
        rtt_us: 40,
        snd_cwnd_segments: 100,
        snd_mss_bytes: 1448,
        pmtu_bytes: 1500,
        ..TcpInfoReport::default()
    }
}

#[allow(clippy::too_many_arguments)]
fn side(
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
        window_start_ns,
        window_end_ns,
        sndbuf_bytes: (role == Role::Sender).then_some(2_626_560),
        rcvbuf_bytes: (role == Role::Receiver).then_some(131_072),
        congestion: Some("cubic".into()),
        pmtu_bytes: Some(1500),
        tcp_info: Some(tcp_info(if role == Role::Sender { 3 } else { 0 })),
        error: None,
        path: None,
        path_fallback: None,
        zerocopy: None,
        verified_bytes: None,
        verify_errors: None,
    }
}

fn breakdown(busy: f64) -> CpuBreakdown {
    CpuBreakdown {
        user_pct: busy / 2.0,
        system_pct: busy / 4.0,
        irq_pct: 0.0,
        softirq_pct: busy / 4.0,
        steal_pct: 0.0,
        idle_pct: 100.0 - busy,
        busy_pct: busy,
    }
}

fn cpu(
    cpus: u32,
    total_busy: f64,
    busiest_busy: f64,
    threads_ns: u64,
    window_ns: u64,
) -> CpuReport {
    CpuReport {
        window_start_ns: S,
        window_end_ns: S + window_ns,
        system: SystemCpuUtil {
            cpus,
            total: breakdown(total_busy),
            per_cpu: vec![(0, breakdown(busiest_busy)), (1, breakdown(total_busy))],
            busiest_cpu: 3,
            busiest: breakdown(busiest_busy),
            window_ticks: 100,
        },
        threads_user_ns: threads_ns / 4,
        threads_system_ns: threads_ns - threads_ns / 4,
    }
}

fn report(host: HostRole, flows: Vec<FlowSide>, cpu: Option<CpuReport>) -> SideReport {
    SideReport {
        host,
        status: SideStatus::Completed,
        flows,
        intervals: Vec::new(),
        cpu,
        env: Environment::default(),
        warnings: Vec::new(),
        rr: None,
        udp: None,
        engine: None,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn has(s: &Summary, needle: &str) -> bool {
    s.warnings.iter().any(|w| w.contains(needle))
}

/// Forward, 2 flows, 625 MB each over a 1 s window at both ends: 10 Gbit/s in total.
fn forward_two() -> (TestSpec, SideReport, SideReport) {
    let spec = spec(Direction::Forward, 2);
    let c2s = FlowDir::ClientToServer;
    let client = report(
        HostRole::Client,
        vec![
            side(0, c2s, Role::Sender, 700_000_000, 625_000_000, S, 2 * S),
            side(1, c2s, Role::Sender, 700_000_000, 625_000_000, S, 2 * S),
        ],
        Some(cpu(4, 25.0, 60.0, S / 2, S)),
    );
    let mut server = report(
        HostRole::Server,
        vec![
            side(0, c2s, Role::Receiver, 700_000_000, 625_000_000, S, 2 * S),
            side(1, c2s, Role::Receiver, 700_000_000, 625_000_000, S, 2 * S),
        ],
        Some(cpu(4, 30.0, 70.0, S / 2, S)),
    );
    server.intervals = vec![
        IntervalSample {
            index: 0,
            start_ns: 0,
            end_ns: S,
            in_warmup: true,
            flows: vec![
                FlowInterval {
                    flow: 0,
                    role: Role::Receiver,
                    bytes: 75_000_000,
                },
                FlowInterval {
                    flow: 1,
                    role: Role::Receiver,
                    bytes: 75_000_000,
                },
            ],
        },
        IntervalSample {
            index: 1,
            start_ns: S,
            end_ns: 2 * S,
            in_warmup: false,
            flows: vec![
                FlowInterval {
                    flow: 0,
                    role: Role::Receiver,
                    bytes: 625_000_000,
                },
                FlowInterval {
                    flow: 1,
                    role: Role::Receiver,
                    bytes: 625_000_000,
                },
            ],
        },
    ];
    (spec, client, server)
}

#[test]
fn forward_two_flows_arithmetic() {
    let (spec, client, server) = forward_two();
    let s = summarize(&spec, &client, Some(&server), false);
    assert_eq!(s.directions.len(), 1);
    let d = &s.directions[0];
    assert_eq!(d.dir, FlowDir::ClientToServer);
    assert_eq!(d.flows, 2);
    assert_eq!(d.receiver_bytes, 1_250_000_000);
    assert_eq!(d.receiver_window_ns, S);
    assert_eq!(d.receiver_throughput_bps, 10e9);
    assert_eq!(d.sender_throughput_bps, 10e9);
    assert_eq!(d.sender_total_bytes, 1_400_000_000);
    assert_eq!(d.receiver_total_bytes, 1_400_000_000);
    assert_eq!(d.unaccounted_bytes, 0);
    assert_eq!(d.retransmits, 6);
    assert_eq!(d.jain_index, Some(1.0));
    let sp = d.flow_throughput.unwrap();
    assert_eq!((sp.n, sp.min, sp.max), (2, 5e9, 5e9));

    assert_eq!(s.flows.len(), 2);
    for f in &s.flows {
        assert_eq!(f.sender, HostRole::Client);
        assert_eq!(f.receiver_throughput_bps, 5e9);
        assert_eq!(f.sender_throughput_bps, 5e9);
        assert_eq!(f.retransmits, 3);
        assert_eq!(f.rtt_us, Some(40));
        assert_eq!(f.cwnd_segments, Some(100));
        assert_eq!(f.mss_bytes, Some(1448));
        assert_eq!(f.pmtu_bytes, Some(1500));
        assert_eq!(f.sndbuf_bytes, Some(2_626_560));
        assert_eq!(f.rcvbuf_bytes, Some(131_072));
        assert_eq!(f.congestion.as_deref(), Some("cubic"));
        assert_eq!(f.error, None);
    }
    assert_eq!(s.congestion, vec!["cubic".to_string()]);
    assert!(!s.same_host);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);

    // Intervals from the receiver (the server).
    assert_eq!(s.intervals.len(), 2);
    let r = &s.intervals[1];
    assert_eq!(r.host, HostRole::Server);
    assert_eq!(r.bytes, 1_250_000_000);
    assert_eq!(r.throughput_bps, 10e9);
    assert_eq!((r.start_s, r.end_s), (1.0, 2.0));
    assert!(s.intervals[0].in_warmup && !r.in_warmup);

    // Live rows: only the receiving end produces rows.
    assert_eq!(
        interval_rows(HostRole::Server, &spec, &server.intervals[1]),
        vec![r.clone()]
    );
    assert!(interval_rows(HostRole::Client, &spec, &server.intervals[1]).is_empty());

    // CPU per end.
    assert_eq!(s.cpu.len(), 2);
    let c = &s.cpu[0];
    assert_eq!(c.host, HostRole::Client);
    assert_eq!(c.window_ns, S);
    assert_eq!(c.system_busy_pct, 25.0);
    assert_eq!(c.busiest_cpu, 3);
    assert_eq!(c.busiest.busy_pct, 60.0);
    assert_eq!(c.threads_util_pct_of_one_cpu, 50.0);
}

#[test]
fn bidir_has_both_directions() {
    let spec = spec(Direction::Bidir, 1);
    let (c2s, s2c) = (FlowDir::ClientToServer, FlowDir::ServerToClient);
    let mut client = report(
        HostRole::Client,
        vec![
            side(0, c2s, Role::Sender, 1000, 1000, S, 2 * S),
            side(1, s2c, Role::Receiver, 500, 500, S, 2 * S),
        ],
        None,
    );
    let mut server = report(
        HostRole::Server,
        vec![
            side(0, c2s, Role::Receiver, 1000, 1000, S, 2 * S),
            side(1, s2c, Role::Sender, 500, 500, S, 2 * S),
        ],
        None,
    );
    let sample = |role0: Role, role1: Role| IntervalSample {
        index: 0,
        start_ns: 0,
        end_ns: S / 2,
        in_warmup: false,
        flows: vec![
            FlowInterval {
                flow: 0,
                role: role0,
                bytes: 100,
            },
            FlowInterval {
                flow: 1,
                role: role1,
                bytes: 50,
            },
        ],
    };
    client.intervals = vec![sample(Role::Sender, Role::Receiver)];
    server.intervals = vec![sample(Role::Receiver, Role::Sender)];
    let s = summarize(&spec, &client, Some(&server), false);
    let dirs: Vec<FlowDir> = s.directions.iter().map(|d| d.dir).collect();
    assert_eq!(dirs, vec![c2s, s2c]);
    assert_eq!(s.directions[0].receiver_throughput_bps, 8000.0);
    assert_eq!(s.directions[1].receiver_throughput_bps, 4000.0);
    assert_eq!(s.flows[1].sender, HostRole::Server);
    assert_eq!(s.flows[1].dir, s2c);
    // One row per direction, each from its receiving end.
    assert_eq!(s.intervals.len(), 2);
    assert_eq!(
        (
            s.intervals[0].host,
            s.intervals[0].dir,
            s.intervals[0].bytes
        ),
        (HostRole::Server, c2s, 100)
    );
    assert_eq!(
        (
            s.intervals[1].host,
            s.intervals[1].dir,
            s.intervals[1].bytes
        ),
        (HostRole::Client, s2c, 50)
    );
    assert_eq!(s.intervals[1].throughput_bps, 800.0);
    let live = interval_rows(HostRole::Client, &spec, &client.intervals[0]);
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].dir, s2c);
    assert!(has(&s, "client: no CPU figures"));
}

#[test]
fn missing_server_report_uses_what_exists() {
    let (spec, client, _) = forward_two();
    let s = summarize(&spec, &client, None, false);
    let d = &s.directions[0];
    assert_eq!(d.receiver_bytes, 0);
    assert_eq!(d.receiver_throughput_bps, 0.0);
    assert_eq!(d.sender_throughput_bps, 10e9);
    assert_eq!(d.sender_total_bytes, 1_400_000_000);
    assert_eq!(d.flow_throughput, None);
    assert!(has(&s, "server: no report received"), "{:?}", s.warnings);
    // No claims about unaccounted bytes without the receiver's report.
    assert!(!has(&s, "never read"));
    assert_eq!(s.cpu.len(), 1);
    assert!(s.intervals.is_empty());
    for f in &s.flows {
        assert_eq!(f.receiver_bytes, 0);
        assert_eq!(f.rcvbuf_bytes, None);
        assert_eq!(f.sender_throughput_bps, 5e9);
    }
}

#[test]
fn unaccounted_bytes_are_explained() {
    let (spec, client, mut server) = forward_two();
    server.flows[1].total_bytes -= 1000;
    let s = summarize(&spec, &client, Some(&server), false);
    assert_eq!(s.directions[0].unaccounted_bytes, 1000);
    assert!(
        has(&s, "1000 bytes were sent but never read"),
        "{:?}",
        s.warnings
    );
    assert!(has(&s, "cut short"));
}

#[test]
fn window_difference_note() {
    let (spec, mut client, server) = forward_two();
    client.flows[0].window_bytes += 125_000_000; // sender +10 % of the receivers' total
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(has(&s, "note: forward"), "{:?}", s.warnings);
    assert!(has(&s, "bytes in flight"));
    // Under 5 %: no note.
    let (spec, mut client, server) = forward_two();
    client.flows[0].window_bytes += 1_000_000;
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(!has(&s, "note:"), "{:?}", s.warnings);
}

#[test]
fn zero_window_does_not_panic() {
    let (spec, mut client, mut server) = forward_two();
    for f in server.flows.iter_mut().chain(client.flows.iter_mut()) {
        f.window_end_ns = f.window_start_ns;
    }
    client.cpu = Some(cpu(4, 25.0, 60.0, S, 0));
    server.intervals[1].end_ns = server.intervals[1].start_ns;
    let s = summarize(&spec, &client, Some(&server), false);
    let d = &s.directions[0];
    assert_eq!(d.receiver_throughput_bps, 0.0);
    assert_eq!(d.sender_throughput_bps, 0.0);
    assert!(s.flows.iter().all(|f| f.receiver_throughput_bps == 0.0));
    assert!(
        has(&s, "zero-length measurement window"),
        "{:?}",
        s.warnings
    );
    assert_eq!(s.intervals[1].throughput_bps, 0.0);
    assert_eq!(s.cpu[0].threads_util_pct_of_one_cpu, 0.0);
    assert_eq!(s.cpu[0].service_demand_us_per_kb, None);
    assert!(has(&s, "CPU window is empty"));
    // Everything stays finite, so the JSON round-trips.
    let r = result_with(vec![record(0, s)]);
    assert_eq!(RunResult::from_json(&print::json(&r)).unwrap(), r);
}

#[test]
fn cpu_bound_and_same_host_warnings() {
    let (spec, client, mut server) = forward_two();
    server.cpu = Some(cpu(4, 30.0, 99.0, S / 2, S));
    let s = summarize(&spec, &client, Some(&server), true);
    assert!(
        has(
            &s,
            "CPU-bound: server CPU 3 at 99% busy — the result measures the CPU, not the path"
        ),
        "{:?}",
        s.warnings
    );
    assert!(!has(&s, "CPU-bound: client"));
    assert!(s.same_host);
    assert!(has(&s, "one machine"));
}

#[test]
fn service_demand_values() {
    // 50 % of 2 CPUs while delivering 8 Gbit/s: 1e6 µs/s / 976 562.5 KB/s = 1.024 µs/KB.
    let spec = spec(Direction::Forward, 1);
    let c2s = FlowDir::ClientToServer;
    let client = report(
        HostRole::Client,
        vec![side(0, c2s, Role::Sender, S, S, S, 2 * S)],
        Some(cpu(2, 50.0, 50.0, S, S)),
    );
    let server = report(
        HostRole::Server,
        vec![side(0, c2s, Role::Receiver, S, S, S, 2 * S)],
        Some(cpu(2, 50.0, 50.0, S, S)),
    );
    let s = summarize(&spec, &client, Some(&server), false);
    assert_eq!(s.directions[0].receiver_throughput_bps, 8e9);
    for c in &s.cpu {
        assert!(close(c.service_demand_us_per_kb.unwrap(), 1.024));
        // 1 s of thread CPU for 1e9 bytes: 1e6 µs / 976 562.5 KB.
        assert!(close(c.threads_service_demand_us_per_kb.unwrap(), 1.024));
        assert_eq!(c.threads_util_pct_of_one_cpu, 100.0);
        assert_eq!(c.threads_user_ns + c.threads_system_ns, S);
    }
}

#[test]
fn warnings_and_flow_errors_are_carried_over() {
    let (spec, mut client, mut server) = forward_two();
    client.warnings.push("flow 1: no EOF".into());
    server.flows[0].error = Some("connection reset".into());
    server.status = SideStatus::Aborted("peer vanished".into());
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(has(&s, "client: flow 1: no EOF"));
    assert!(has(&s, "flow 0: receiver (server): connection reset"));
    assert!(has(
        &s,
        "server: its part of the test was aborted: peer vanished"
    ));
    assert_eq!(
        s.flows[0].error.as_deref(),
        Some("receiver (server): connection reset")
    );
}

#[test]
fn requested_congestion_mismatch_is_reported() {
    let (mut spec, client, server) = forward_two();
    spec.congestion = Some("bbr".into());
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(has(
        &s,
        "congestion control cubic is in use although bbr was requested"
    ));
}

fn record(index: u32, summary: Summary) -> RunRecord {
    RunRecord {
        index,
        status: RunStatus::Completed,
        client: None,
        server: None,
        summary: Some(summary),
    }
}

fn result_with(runs: Vec<RunRecord>) -> RunResult {
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool: "wirebench 0.1.0".into(),
        started_unix_ms: 1_700_000_000_000,
        status: RunStatus::Completed,
        spec: Some(spec(Direction::Forward, 2)),
        server_address: Some("127.0.0.1:5301".into()),
        embedded_server: true,
        runs,
        aggregate: None,
        warnings: Vec::new(),
        error: None,
    }
}

/// Runs whose total throughput is `tps[i]` (bit/s) and whose CPU is 25 %/30 %.
fn runs_with(tps: &[f64]) -> Vec<RunRecord> {
    let (spec, client, server) = forward_two();
    tps.iter()
        .enumerate()
        .map(|(i, &tp)| {
            let mut s = summarize(&spec, &client, Some(&server), false);
            s.directions[0].receiver_throughput_bps = tp;
            record(i as u32, s)
        })
        .collect()
}

#[test]
fn aggregate_target_met() {
    let runs = runs_with(&[10.0e9, 10.01e9, 9.99e9]);
    let a = aggregate(&runs, ConfidenceLevel::P99, 5.0);
    assert_eq!(a.level_pct, 99);
    assert_eq!(a.runs, 3);
    let tp = a.throughput_bps.as_ref().unwrap();
    assert_eq!(tp.n, 3);
    assert!(close(tp.mean, 10e9));
    assert!(tp.width_pct < 5.0);
    // Identical CPU figures: zero width.
    assert_eq!(a.client_cpu_busy_pct.as_ref().unwrap().mean, 25.0);
    assert_eq!(a.server_cpu_busy_pct.as_ref().unwrap().width_pct, 0.0);
    assert!(a.target_met);
}

#[test]
fn aggregate_target_not_met() {
    let runs = runs_with(&[5e9, 10e9, 15e9]);
    let a = aggregate(&runs, ConfidenceLevel::P95, 5.0);
    assert!(!a.target_met);
    assert!(a.throughput_bps.unwrap().width_pct > 5.0);

    // One run: no interval, so the target cannot be met.
    let a = aggregate(&runs_with(&[10e9]), ConfidenceLevel::P95, 5.0);
    assert!(a.throughput_bps.is_none() && !a.target_met);

    // Runs that did not complete do not count.
    let mut runs = runs_with(&[10e9, 10e9, 1e9]);
    runs[2].status = RunStatus::Interrupted;
    let a = aggregate(&runs, ConfidenceLevel::P95, 5.0);
    assert_eq!(a.throughput_bps.as_ref().unwrap().n, 2);
    assert!(a.target_met);

    // A zero mean has an infinite relative width: not met, left out of the JSON.
    let a = aggregate(&runs_with(&[0.0, 0.0]), ConfidenceLevel::P95, 5.0);
    assert!(!a.target_met);
    assert!(a.throughput_bps.is_none());
    let a = aggregate(&runs_with(&[1e9, 1e9]), ConfidenceLevel::P95, f64::NAN);
    assert_eq!(a.target_width_pct, 0.0);
}

#[test]
fn csv_quoting_and_rows() {
    assert_eq!(print::csv_cell("cubic"), "cubic");
    assert_eq!(print::csv_cell("a,b"), "\"a,b\"");
    assert_eq!(print::csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
    assert_eq!(print::csv_cell("x\ny"), "\"x\ny\"");

    let mut runs = runs_with(&[10e9]);
    if let Some(s) = runs[0].summary.as_mut() {
        s.congestion = vec!["we\"ird,cc".into(), "bbr".into()];
    }
    let text = print::csv(&result_with(runs));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0], print::CSV_HEADER);
    assert_eq!(lines[0].split(',').count(), 16);
    assert!(lines[0].starts_with("run,status,direction,flows,receiver_throughput_bps,"));
    assert_eq!(
        lines[1],
        "0,completed,client_to_server,2,10000000000,10000000000,1250000000,1250000000,6,25,30,\
         ,,\"we\"\"ird,cc;bbr\",131072,10000"
            .replace(",,,", &format!(",{},{},", sd(25.0), sd(30.0)))
    );

    // A failed invocation: one row, status and empty figures.
    let mut r = result_with(Vec::new());
    r.status = RunStatus::Failed;
    let text = print::csv(&r);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1], ",failed,,,,,,,,,,,,,131072,10000");
    // A run without a summary: one row.
    let mut r = result_with(vec![RunRecord {
        index: 0,
        status: RunStatus::Aborted,
        client: None,
        server: None,
        summary: None,
    }]);
    r.spec = None;
    assert_eq!(
        print::csv(&r).lines().nth(1),
        Some("0,aborted,,,,,,,,,,,,,,")
    );
}

/// The service demand an end of `forward_two` reports at `busy` % of 4 CPUs, as CSV text.
fn sd(busy: f64) -> String {
    wirebench_stats::demand::us_per_kb(busy, 4, 10e9)
        .unwrap()
        .to_string()
}

#[test]
fn json_round_trip() {
    let (spec, mut client, server) = forward_two();
    client.warnings.push("a \"quoted\" warning".into());
    let s = summarize(&spec, &client, Some(&server), true);
    let mut runs = vec![RunRecord {
        index: 0,
        status: RunStatus::Completed,
        client: Some(client),
        server: Some(server),
        summary: Some(s),
    }];
    runs.extend(runs_with(&[10.0e9, 9.0e9]).into_iter().map(|mut r| {
        r.index += 1;
        r
    }));
    let mut r = result_with(runs);
    r.aggregate = Some(aggregate(&r.runs, ConfidenceLevel::P99, 5.0));
    r.warnings.push("confidence target not met".into());
    let text = print::json(&r);
    assert!(text.ends_with("}\n"));
    let back = RunResult::from_json(&text).unwrap();
    assert_eq!(back, r);
    let plain: RunResult = serde_json::from_str(&text).unwrap();
    assert_eq!(plain, r);
    // Enum spellings are part of the contract.
    assert!(text.contains("\"status\": \"completed\""));
    assert!(text.contains("\"dir\": \"client_to_server\""));

    // A failed result is valid JSON too.
    let mut f = result_with(Vec::new());
    f.status = RunStatus::Failed;
    f.spec = None;
    f.error = Some(ErrorInfo {
        kind: "connect".into(),
        message: "connection refused".into(),
        field: None,
    });
    assert_eq!(RunResult::from_json(&print::json(&f)).unwrap(), f);
}

#[test]
fn from_json_checks_the_version() {
    let mut r = result_with(Vec::new());
    r.schema_version = SCHEMA_VERSION + 1;
    let e = RunResult::from_json(&print::json(&r)).unwrap_err();
    assert!(
        matches!(e, ReportError::UnsupportedVersion { found: Some(v), .. } if v == u64::from(SCHEMA_VERSION) + 1),
        "{e}"
    );
    assert!(matches!(
        RunResult::from_json("{}"),
        Err(ReportError::UnsupportedVersion { found: None, .. })
    ));
    assert!(matches!(
        RunResult::from_json("not json"),
        Err(ReportError::Json(_))
    ));
}

fn assert_narrow(text: &str) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= print::MAX_COLUMNS,
            "line of {} columns: {line}",
            line.chars().count()
        );
    }
}

#[test]
fn paths_zerocopy_and_verify_are_joined_per_flow_and_summed_per_direction() {
    use wirebench_proto::measure::ZeroCopyStats;
    let (spec, mut client, mut server) = forward_two();
    for (i, f) in client.flows.iter_mut().enumerate() {
        f.path = Some(if i == 0 { "zerocopy" } else { "copy" }.into());
        if i == 0 {
            f.zerocopy = Some(ZeroCopyStats {
                sends: 10,
                sends_completed_zerocopy: 3,
                sends_completed_copied: 7,
                // Receive-side fields of a sender are not taken.
                bytes_mapped: 999,
                ..ZeroCopyStats::default()
            });
        } else {
            f.path_fallback = Some("send path zerocopy could not be set up".into());
        }
    }
    for f in server.flows.iter_mut() {
        f.path = Some("zerocopy".into());
        f.zerocopy = Some(ZeroCopyStats {
            bytes_mapped: 600_000_000,
            bytes_copied: 100_000_000,
            ..ZeroCopyStats::default()
        });
        f.verified_bytes = Some(700_000_000);
        f.verify_errors = Some(0);
    }
    let s = summarize(&spec, &client, Some(&server), false);
    let f0 = &s.flows[0];
    assert_eq!(f0.send_path.as_deref(), Some("zerocopy"));
    assert_eq!(f0.recv_path.as_deref(), Some("zerocopy"));
    assert_eq!(f0.path_fallback, None);
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
    let f1 = &s.flows[1];
    assert_eq!(f1.send_path.as_deref(), Some("copy"));
    assert_eq!(
        f1.path_fallback.as_deref(),
        Some("sender (client): send path zerocopy could not be set up")
    );
    let d = &s.directions[0];
    assert_eq!(
        d.send_paths,
        vec!["zerocopy".to_string(), "copy".to_string()]
    );
    assert_eq!(d.recv_paths, vec!["zerocopy".to_string()]);
    assert_eq!(d.path_fallback_flows, 1);
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

    // Reports without paths (older ends): no paths line, nothing invented.
    let (spec, client, server) = forward_two();
    let s = summarize(&spec, &client, Some(&server), false);
    assert!(s.directions[0].send_paths.is_empty() && s.directions[0].zerocopy.is_none());
    assert_eq!(s.directions[0].verified_bytes, None);
    assert!(!print::human(&result_with(vec![record(0, s)])).contains("paths:"));
}

#[test]
fn human_output_has_units_and_definitions() {
    let (spec, client, server) = forward_two();
    let mut s = summarize(&spec, &client, Some(&server), true);
    s.warnings.push("x".repeat(150));
    let mut runs = vec![record(0, s)];
    runs.extend(runs_with(&[5e9, 15e9]).into_iter().map(|mut r| {
        r.index += 1;
        r
    }));
    let mut r = result_with(runs);
    r.aggregate = Some(aggregate(&r.runs, ConfidenceLevel::P99, 5.0));
    let text = print::human(&r);
    for needle in [
        "recv Gbit/s",
        "send Gbit/s",
        "recv bytes",
        "retrans",
        "RTT µs",
        "cwnd seg",
        "10^9",
        "µs/KB",
        "busiest CPU 3",
        "softirq",
        "wirebench threads 50.0 % of one CPU",
        "congestion control in use: cubic",
        "SO_SNDBUF 2626560 bytes",
        "SO_RCVBUF 131072 bytes",
        "warning: client and server ran on one machine",
        "WARNING: confidence target not met",
        "(99% CI, width",
        "target 5%: not met",
        "total forward      10.000      10.000       1250000000       1250000000        6",
        "    0 forward       5.000       5.000        625000000        625000000        3       40      100",
        "Gbit/s = 10^9 bit/s of payload; receiver = bytes read by the application",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    assert_narrow(&text);

    // A met target has no WARNING line.
    let mut r = result_with(runs_with(&[10.0e9, 10.01e9, 9.99e9]));
    r.aggregate = Some(aggregate(&r.runs, ConfidenceLevel::P99, 5.0));
    let text = print::human(&r);
    assert!(text.contains("target 5%: met"), "{text}");
    assert!(!text.contains("WARNING"), "{text}");
    assert!(text.contains("throughput 10.00 Gbit/s ±"), "{text}");
    assert_narrow(&text);
}

#[test]
fn human_output_of_a_failure() {
    let mut r = result_with(Vec::new());
    r.status = RunStatus::Failed;
    r.error = Some(ErrorInfo {
        kind: "invalid_spec".into(),
        message: "flows = 3 is out of range (allowed 1..=2)".into(),
        field: Some("flows".into()),
    });
    let text = print::human(&r);
    assert!(
        text.contains(
            "error: invalid_spec: flows = 3 is out of range (allowed 1..=2) (field flows)"
        ),
        "{text}"
    );
    assert!(!text.contains("10^9"));
    assert_narrow(&text);
}

#[test]
fn interval_line_format() {
    let row = crate::schema::IntervalRow {
        start_s: 1.0,
        end_s: 2.0,
        host: HostRole::Server,
        dir: FlowDir::ClientToServer,
        bytes: 1_440_000_000,
        throughput_bps: 12.345e9,
        in_warmup: false,
    };
    assert_eq!(
        print::interval_line(&row),
        "[  1.00-  2.00 s] server recv forward  12.345 Gbit/s  1.44 GB"
    );
    let row = crate::schema::IntervalRow {
        in_warmup: true,
        dir: FlowDir::ServerToClient,
        host: HostRole::Client,
        ..row
    };
    assert!(print::interval_line(&row).ends_with("GB (warm-up)"));
    assert!(print::interval_line(&row).contains("client recv reverse"));
}

/// `docs/results.schema.json` must be what the types generate.
/// Regenerate with `WIREBENCH_BLESS=1 cargo test -p wirebench-report schema_file`.
#[test]
fn schema_file_is_current() {
    let generated = crate::schema::schema_json();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/results.schema.json"
    );
    if std::env::var_os("WIREBENCH_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(path, &generated).expect("writing docs/results.schema.json");
        return;
    }
    let checked_in = include_str!("../../../docs/results.schema.json");
    assert!(
        checked_in == generated,
        "docs/results.schema.json is out of date with the RunResult types; regenerate it with \
         `WIREBENCH_BLESS=1 cargo test -p wirebench-report schema_file` and review the diff \
         (bump SCHEMA_VERSION for incompatible changes)"
    );
    // And it is a schema of the document: the top-level properties are RunResult's fields.
    let v: serde_json::Value = serde_json::from_str(&generated).unwrap();
    let props = v["properties"].as_object().unwrap();
    for field in [
        "schema_version",
        "status",
        "spec",
        "runs",
        "aggregate",
        "error",
    ] {
        assert!(props.contains_key(field), "{field}");
    }
}
