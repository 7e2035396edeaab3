//! The printers: JSON, CSV, human text, live lines, and the checked-in schema.

use wirebench_model::abort::AbortReason;
use wirebench_model::error::{ErrorInfo, ErrorKind};
use wirebench_model::result::{ResultError, RunResult, RunStatus, SCHEMA_VERSION};
use wirebench_model::rr::RrCounts;
use wirebench_model::side::{HostRole, IntervalData, Role};
use wirebench_model::spec::{
    CloseMode, CrrSpec, Direction, RrLoop, RrSpec, TestSpec, UdpRrSpec, WorkloadKind, WorkloadSpec,
};
use wirebench_model::validate::{LimitName, SpecField};
use wirebench_model::warning::{CpuUnmeasured, Noted, Warning};
use wirebench_stats::ci::ConfidenceLevel;

use super::*;
use wirebench_analysis::{aggregate, summarize};
use wirebench_report::print;

// ───── CSV ─────

/// The service demand an end of `forward_two` reports at `busy` % of 4 CPUs, as CSV text.
fn sd(busy: f64) -> String {
    wirebench_stats::demand::us_per_kb(busy, 4, 10e9)
        .unwrap()
        .to_string()
}

#[test]
fn csv_quoting_and_rows() {
    assert_eq!(print::csv_cell("cubic"), "cubic");
    assert_eq!(print::csv_cell("a,b"), "\"a,b\"");
    assert_eq!(print::csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
    assert_eq!(print::csv_cell("x\ny"), "\"x\ny\"");
    assert_eq!(print::csv_cell("x\ry"), "\"x\ry\"");

    let mut runs = runs_with(&[10e9]);
    if let Some(s) = runs[0].summary.as_mut() {
        s.congestion = vec!["we\"ird,cc".into(), "bbr".into()];
    }
    let text = print::csv(&result_with(runs));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0], print::csv_header(Some(WorkloadKind::Stream)));
    assert_eq!(lines[0].split(',').count(), 20);
    assert!(lines[0]
        .starts_with("started_utc,run,status,workload,direction,flows,receiver_throughput_bps,"));
    assert!(lines[0].ends_with(",send_size_bytes,recv_size_bytes,duration_ms,error"));
    // Run 1 (1-based), forward, 2 flows, 10 Gbit/s both ends, 1.25 GB both ends, 6
    // retransmits, CPU 25 / 30 %, service demand, the congestion list quoted, 128 KiB calls,
    // 10 s, no error.
    assert_eq!(
        lines[1],
        format!(
            "2023-11-14T22:13:20.000Z,1,completed,stream,forward,2,10000000000,10000000000,\
             1250000000,1250000000,6,25,30,{},{},\"we\"\"ird,cc;bbr\",131072,131072,10000,",
            sd(25.0),
            sd(30.0)
        )
    );

    // A failed invocation: one row with its status, empty figures and the error.
    let mut r = result_with(Vec::new());
    r.status = RunStatus::Failed;
    r.error = Some(ErrorInfo::new(ErrorKind::Connect, "connection refused"));
    let text = print::csv(&r);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    // The spec's own columns (call sizes, duration) are empty too: the row has no figures.
    assert_eq!(
        lines[1],
        format!(
            "2023-11-14T22:13:20.000Z,,failed,stream{}connect: connection refused",
            ",".repeat(16)
        )
    );
    assert_eq!(lines[1].split(',').count(), 20);
    // A run without a summary: one row.
    let mut r = result_with(vec![RunRecord {
        index: 0,
        status: RunStatus::Aborted,
        client: None,
        server: None,
        summary: None,
        iperf3: None,
    }]);
    r.spec = None;
    assert_eq!(
        print::csv(&r).lines().nth(1),
        Some(format!("2023-11-14T22:13:20.000Z,1,aborted{}", ",".repeat(17)).as_str())
    );
}

#[test]
fn csv_header_per_family() {
    let lead = "started_utc,run,status,workload,direction,";
    let rr = print::csv_header(Some(WorkloadKind::Rr));
    for k in [WorkloadKind::Crr, WorkloadKind::UdpRr] {
        assert_eq!(print::csv_header(Some(k)), rr);
    }
    assert_eq!(
        rr,
        format!(
            "{lead}flows,transactions,transactions_per_s,rtt_min_ns,rtt_mean_ns,rtt_p50_ns,\
             rtt_p90_ns,rtt_p99_ns,rtt_p999_ns,rtt_max_ns,lost,errors,client_cpu_busy_pct,\
             server_cpu_busy_pct,client_sd_us_per_tx,server_sd_us_per_tx,request_size_bytes,\
             response_size_bytes,duration_ms,error"
        )
    );
    let udp = print::csv_header(Some(WorkloadKind::UdpStream));
    assert_eq!(
        udp,
        format!(
            "{lead}flows,datagram_bytes,sender_rate_bps,receiver_rate_bps,window_sent,\
             window_received,window_lost,window_loss_pct,late,duplicate,jitter_max_ns,\
             invalid_datagrams,lost_total,refused_at_sender,dropped_at_receiving_sockets,\
             dropped_by_receiving_host,lost_in_path,client_cpu_busy_pct,server_cpu_busy_pct,\
             duration_ms,error"
        )
    );
    // Unknown workload: the stream family.
    assert_eq!(
        print::csv_header(None),
        print::csv_header(Some(WorkloadKind::Stream))
    );
}

#[test]
fn csv_of_request_response_runs() {
    let (spec, client, server) = tcp_rr_two();
    let s = summarize(&spec, &client, Some(&server), false);
    let mut r = result_for(spec, vec![record(0, s.clone()), record(1, s)]);
    r.runs[1].status = RunStatus::Interrupted;
    let text = print::csv(&r);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0], print::csv_header(Some(WorkloadKind::Rr)));
    // latency(40 000, 28 000, 80 000): min 14 000, mean 28 500, p50 28 000, p90 29 000,
    // p99 80 000, p99.9 160 000, max 320 000; service demand 50 and 25 µs/tx; 1-byte
    // messages; 2 s.
    let row = |n: u32, status: &str| {
        format!(
            "2023-11-14T22:13:20.000Z,{n},{status},rr,forward,2,40000,20000,14000,28500,28000,\
             29000,80000,160000,320000,0,0,50,25,50,25,1,1,2000,"
        )
    };
    assert_eq!(lines[1], row(1, "completed"));
    assert_eq!(lines[2], row(2, "interrupted"));
    for l in &lines {
        assert_eq!(l.split(',').count(), 25, "{l}");
    }

    // UDP RR: the lost and error columns.
    let mut spec = TestSpec::new(WorkloadSpec::UdpRr(UdpRrSpec::default()));
    spec.common.flows = 1;
    let w = RrCounts {
        transactions: 975,
        lost: 25,
        errors: 3,
        ..RrCounts::default()
    };
    let client = rr_report(
        HostRole::Client,
        (S, 2 * S),
        vec![rr_flow(0, w, w, None)],
        None,
        None,
    );
    let s = summarize(&spec, &client, None, false);
    let text = print::csv(&result_for(spec, vec![record(0, s)]));
    assert_eq!(
        text.lines().nth(1).unwrap(),
        "2023-11-14T22:13:20.000Z,1,completed,udp_rr,forward,1,975,975,,,,,,,,25,3,,,,,8,8,\
         10000,"
    );
}

#[test]
fn csv_of_udp_runs_and_the_error_column() {
    let (spec, client, server) = udp_forward_one();
    let s = summarize(&spec, &client, Some(&server), false);
    let mut r = result_for(spec, vec![record(0, s)]);
    // An invocation error is repeated on every row, quoted as needed.
    r.status = RunStatus::Interrupted;
    r.error = Some(ErrorInfo::new(
        ErrorKind::Interrupted,
        "stopped by \"SIGINT\", after 1 run",
    ));
    let text = print::csv(&r);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0], print::csv_header(Some(WorkloadKind::UdpStream)));
    // 1000-byte datagrams, 8 / 7.8 Mbit/s, 2000 sent 1950 received 50 lost 2.5 %, 5 late, 3
    // duplicates, jitter 12 345 ns, 10 invalid, 70 lost = 10 + 20 + 15 + 25; CPU 10 / 12 %;
    // 2 s.
    assert_eq!(
        lines[1],
        "2023-11-14T22:13:20.000Z,1,completed,udp_stream,forward,1,1000,8000000,7800000,2000,\
         1950,50,2.5,5,3,12345,10,70,10,20,15,25,10,12,2000,\
         \"interrupted: stopped by \"\"SIGINT\"\", after 1 run\""
    );

    // Unknown attributions are empty cells.
    let (spec, client, _) = udp_forward_one();
    let s = summarize(&spec, &client, None, false);
    let text = print::csv(&result_for(spec, vec![record(0, s)]));
    let cells: Vec<String> = text
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .map(String::from)
        .collect();
    let header = print::csv_header(Some(WorkloadKind::UdpStream));
    let col = |name: &str| header.split(',').position(|h| h == name).unwrap();
    assert_eq!(cells[col("dropped_at_receiving_sockets")], "");
    assert_eq!(cells[col("dropped_by_receiving_host")], "");
    assert_eq!(cells[col("lost_in_path")], "2500");
    assert_eq!(cells[col("server_cpu_busy_pct")], "");
    assert_eq!(cells[col("client_cpu_busy_pct")], "10");
}

/// `--csv --intervals`: one row per interval; UDP rows carry the datagrams, the sequence
/// numbers covered, the lost ones and the jitter (and `lost` in the column request/response
/// uses for its lost transactions), request/response rows the round-trip percentiles; every
/// row has every column.
#[test]
fn csv_interval_rows_of_udp_and_request_response() {
    use wirebench_model::rr::{RrFlowInterval, RrInterval};
    use wirebench_model::side::Span;
    let (spec, client, server) = udp_forward_one();
    let s = summarize(&spec, &client, Some(&server), false);
    let text = print::csv_intervals(&result_for(spec, vec![record(0, s)]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(header.len(), 21);
    // 990 000 B in [1 s, 2 s]; 10 lost of 1000 (1 %); 990 datagrams, 2 late, 1 duplicate;
    // jitter 12 000 ns.
    assert_eq!(
        lines[1],
        "2023-11-14T22:13:20.000Z,1,udp_stream,server,forward,1,2,false,990000,7920000,,,10,990,\
         1000,1,2,1,12000,,"
    );

    let (spec, mut client, server) = tcp_rr_two();
    let flows = vec![
        RrFlowInterval {
            flow: 0,
            transactions: 15_000,
            lost: 0,
            rtt_p50_ns: Some(24_000),
            rtt_p99_ns: Some(61_000),
        },
        RrFlowInterval {
            flow: 1,
            transactions: 0,
            lost: 0,
            rtt_p50_ns: None,
            rtt_p99_ns: None,
        },
    ];
    rr_mut(&mut client).intervals = vec![RrInterval {
        index: 0,
        span: Span {
            start_ns: S,
            end_ns: 2 * S,
        },
        in_warmup: false,
        flows,
        rtt_p50_ns: Some(24_000),
        rtt_p99_ns: Some(61_000),
    }];
    let s = summarize(&spec, &client, Some(&server), false);
    let text = print::csv_intervals(&result_for(spec, vec![record(0, s)]));
    assert_eq!(
        text.lines().nth(1).unwrap(),
        "2023-11-14T22:13:20.000Z,1,rr,client,forward,1,2,false,,,15000,15000,0,,,,,,,24000,61000"
    );
    for l in text.lines() {
        assert_eq!(l.split(',').count(), 21, "{l}");
    }
}

/// `--csv --per-flow`: each flow's addresses, as both ends reported them, whatever the
/// workload (a missing report leaves its cells empty).
#[test]
fn csv_flow_rows_carry_both_ends_addresses() {
    let (spec, mut client, mut server) = tcp_rr_two();
    let a = |s: &str| Some(s.to_string());
    for (i, f) in rr_mut(&mut client).flows.iter_mut().enumerate() {
        (f.local, f.peer) = (a(&format!("10.0.0.1:{}", 40_000 + i)), a("10.0.0.2:5201"));
    }
    let f = &mut rr_mut(&mut server).flows[1];
    (f.local, f.peer) = (a("10.0.0.2:5201"), a("10.0.0.1:40001"));
    let s = summarize(&spec, &client, Some(&server), false);
    let mut run = record(0, s);
    (run.client, run.server) = (Some(client), Some(server));
    let text = print::csv_flows(&result_for(spec, vec![run]));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].ends_with(",client_local,client_peer,server_local,server_peer"));
    let tail = |l: &str| l.split(',').skip(16).collect::<Vec<_>>().join(",");
    assert_eq!(tail(lines[1]), "10.0.0.1:40000,10.0.0.2:5201,,");
    assert_eq!(
        tail(lines[2]),
        "10.0.0.1:40001,10.0.0.2:5201,10.0.0.2:5201,10.0.0.1:40001"
    );

    // UDP: the sender's report at the client, the receiver's at the server.
    let (spec, mut client, mut server) = udp_forward_one();
    let snd = &mut udp_mut(&mut client).senders[0];
    (snd.local, snd.peer) = (a("[fd00::1]:33000"), a("[fd00::2]:34000"));
    let rcv = &mut udp_mut(&mut server).receivers[0];
    (rcv.local, rcv.peer) = (a("[fd00::2]:34000"), a("[fd00::1]:33000"));
    let s = summarize(&spec, &client, Some(&server), false);
    let mut run = record(0, s);
    (run.client, run.server) = (Some(client), Some(server));
    let text = print::csv_flows(&result_for(spec, vec![run]));
    let row = text.lines().nth(1).unwrap();
    assert_eq!(row.split(',').count(), 20, "{row}");
    assert!(
        row.ends_with(",[fd00::1]:33000,[fd00::2]:34000,[fd00::2]:34000,[fd00::1]:33000"),
        "{row}"
    );
}

// ───── JSON ─────

#[test]
fn json_round_trip() {
    let (spec, mut client, server) = forward_two();
    client.warnings.push(Warning::CpuNotMeasured {
        reason: CpuUnmeasured::Incomparable {
            detail: "a \"quoted\" detail".into(),
        },
    });
    let s = summarize(&spec, &client, Some(&server), true);
    let mut runs = vec![RunRecord {
        index: 0,
        status: RunStatus::Completed,
        client: Some(client),
        server: Some(server),
        summary: Some(s),
        iperf3: None,
    }];
    runs.extend(runs_with(&[10.0e9, 9.0e9]).into_iter().map(|mut r| {
        r.index += 1;
        r
    }));
    let mut r = result_with(runs);
    r.aggregate = Some(aggregate(&r.runs, ConfidenceLevel::P99, 5.0));
    r.warnings.push(Noted::run(Warning::RunAborted {
        run: 2,
        reason: AbortReason::LimitExceeded {
            limit: LimitName::MaxRate,
            observed_bps: 2_000_000_000,
            max_bps: 1_000_000_000,
        },
    }));
    let text = print::json(&r);
    assert!(text.ends_with("}\n"));
    let back = RunResult::from_json(&text).unwrap();
    assert_eq!(back, r);
    let plain: RunResult = serde_json::from_str(&text).unwrap();
    assert_eq!(plain, r);
    // Enum spellings are part of the contract.
    assert!(text.contains("\"status\": \"completed\""));
    assert!(text.contains("\"dir\": \"client_to_server\""));
    assert!(text.contains("\"code\": \"run_aborted\""));
    assert!(text.contains("\"code\": \"same_host\""));

    // A failed result is valid JSON too.
    let mut f = result_with(Vec::new());
    f.status = RunStatus::Failed;
    f.spec = None;
    f.error = Some(ErrorInfo::new(ErrorKind::Connect, "connection refused"));
    assert_eq!(RunResult::from_json(&print::json(&f)).unwrap(), f);
}

#[test]
fn json_round_trip_of_the_other_workloads() {
    let (spec, client, server) = tcp_rr_two();
    let s = summarize(&spec, &client, Some(&server), false);
    let r = result_for(
        spec,
        vec![RunRecord {
            index: 0,
            status: RunStatus::Completed,
            client: Some(client),
            server: Some(server),
            summary: Some(s),
            iperf3: None,
        }],
    );
    let text = print::json(&r);
    assert_eq!(RunResult::from_json(&text).unwrap(), r);
    assert!(text.contains("\"rr\": {"), "{text}");

    let (spec, client, server) = udp_forward_one();
    let s = summarize(&spec, &client, None, false);
    let r = result_for(
        spec,
        vec![RunRecord {
            index: 0,
            status: RunStatus::Completed,
            client: Some(client),
            server: Some(server),
            summary: Some(s),
            iperf3: None,
        }],
    );
    let text = print::json(&r);
    assert_eq!(RunResult::from_json(&text).unwrap(), r);
    assert!(text.contains("\"udp_stream\": {"), "{text}");
    assert!(
        text.contains("\"dropped_at_receiving_sockets\": null"),
        "{text}"
    );
}

#[test]
fn from_json_checks_the_version() {
    let mut r = result_with(Vec::new());
    r.schema_version = SCHEMA_VERSION + 1;
    let e = RunResult::from_json(&print::json(&r)).unwrap_err();
    assert!(
        matches!(e, ResultError::UnsupportedVersion { found: Some(v), .. } if v == u64::from(SCHEMA_VERSION) + 1),
        "{e}"
    );
    assert!(matches!(
        RunResult::from_json("{}"),
        Err(ResultError::UnsupportedVersion { found: None, .. })
    ));
    assert!(matches!(
        RunResult::from_json("not json"),
        Err(ResultError::Json(_))
    ));
}

// ───── human: stream ─────

#[test]
fn human_output_has_units_and_definitions() {
    let (spec, client, server) = forward_two();
    let mut s = summarize(&spec, &client, Some(&server), true);
    // The client's threads waited a quarter of its window for a CPU.
    s.cpu[0].threads_run_delay_ns = Some(s.cpu[0].window_ns / 4);
    // A warning longer than a line.
    s.warnings.push(Noted::at(
        HostRole::Client,
        Warning::CpuNotMeasured {
            reason: CpuUnmeasured::Incomparable {
                detail: "x".repeat(150),
            },
        },
    ));
    let mut runs = vec![record(0, s)];
    runs.extend(runs_with(&[5e9, 15e9]).into_iter().map(|mut r| {
        r.index += 1;
        r
    }));
    let mut r = result_with(runs);
    r.aggregate = Some(aggregate(&r.runs, ConfidenceLevel::P99, 5.0));
    let text = print::human(&r);
    assert_contains(
        &text,
        &[
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
            "run-queue wait   25.0 % of the window",
            "congestion control in use: cubic",
            "SO_SNDBUF 2626560 bytes",
            "SO_RCVBUF 131072 bytes",
            "warning: both ends ran on one machine",
            "WARNING: confidence target not met",
            "(99% CI, width",
            "target 5%: not met",
            // The totals: 10 Gbit/s received and sent, 1.25e9 B = 1.164 GiB each way, 6
            // retransmits; each flow: 5 Gbit/s, 625e6 B = 596.0 MiB, 3 retransmits, RTT 40 µs,
            // cwnd 100.
            "total forward       10.00       10.00    1.164 GiB    1.164 GiB        6",
            "    0 forward       5.000       5.000    596.0 MiB    596.0 MiB        3       40      100",
        ],
    );
    assert_contains(
        &unwrapped(&text),
        &[
            "(Gbit/s = 10^9 bit/s); receiver = bytes read by the application",
            "warning: client: CPU was not measured: the two /proc/stat snapshots could not be \
             compared (xxxx",
        ],
    );
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
        kind: ErrorKind::InvalidSpec,
        message: "flows = 3 is out of range (allowed 1..=2)".into(),
        field: Some(SpecField::Flows),
        limit: None,
        problem: None,
        daemon: None,
    });
    let text = print::human(&r);
    assert!(
        text.contains(
            "error: invalid_spec: flows = 3 is out of range (allowed 1..=2) (field common.flows)"
        ),
        "{text}"
    );
    assert!(!text.contains("10^9"));
    assert_narrow(&text);
}

#[test]
fn interval_line_format() {
    // 1 543 125 000 B in [1 s, 2 s]: 12.345 Gbit/s, 1.437 GiB.
    let spec = stream_spec(Direction::Forward, 1);
    let sample = IntervalData::Stream(byte_interval(
        1,
        S,
        2 * S,
        false,
        &[(0, Role::Receiver, 1_543_125_000)],
    ));
    assert_eq!(
        print::interval_lines(HostRole::Server, &spec, &sample),
        vec!["[  1.00-  2.00 s] server recv forward   12.35 Gbit/s  1.437 GiB".to_string()]
    );
    // The client receives the reverse flows of a bidirectional test (flow 1 of 1 per
    // direction); a warm-up interval says so.
    let spec = stream_spec(Direction::Bidir, 1);
    let sample = IntervalData::Stream(byte_interval(
        0,
        0,
        S,
        true,
        &[(0, Role::Sender, 5), (1, Role::Receiver, 1_543_125_000)],
    ));
    let lines = print::interval_lines(HostRole::Client, &spec, &sample);
    assert_eq!(lines.len(), 1);
    assert!(lines[0].ends_with("GiB (warm-up)"), "{}", lines[0]);
    assert!(lines[0].contains("client recv reverse"), "{}", lines[0]);
}

// ───── human: request/response ─────

#[test]
fn human_tcp_rr() {
    let (spec, client, server) = tcp_rr_two();
    let s = summarize(&spec, &client, Some(&server), false);
    let text = print::human(&result_for(spec, vec![record(0, s)]));
    assert_contains(
        &unwrapped(&text),
        &[
            "rr, request 1 bytes, response 1 bytes; 2 flows, 2.000 s measured after 1.000 s \
             warm-up, socket buffers autotuned",
        ],
    );
    assert_contains(
        &text,
        &[
            "run 1 of 1: completed",
            // 40 000 in 2 s.
            "TCP RR: 40000 transactions in 2.000 s = 20000.0 transactions/s (2 flows)",
            // latency(40 000, 28 000, 80 000) in µs, on two lines.
            "  latency µs: min 14.0 mean 28.5 stddev 1.5 p50 28.0 p90 29.0
              p99 80.0 p99.9 160.0 p99.99 240.0 max 320.0
",
            "  flow  transactions  trans/s      p50 µs   p99 µs   lost  errors",
            "     0         30000  15000.0        24.0     60.0      0       0",
            "     1         10000   5000.0        40.0     90.0      0       0",
            "  per-flow transactions/s min 5000.0 median 10000.0 max 15000.0; Jain fairness 0.8000",
            "  whole test: client completed 42000 transactions, server answered 42000",
            "  service demand   50.000 µs/tx system-wide (netperf), 25.000 µs/tx wirebench threads",
            "  service demand   25.000 µs/tx system-wide (netperf), 12.500 µs/tx wirebench threads",
            "congestion control in use: cubic (requested: each host's default)",
        ],
    );
    assert_contains(
        &unwrapped(&text),
        &[
            "transactions/s = transactions the client completed (response read in full; CRR: and \
           connection closed) over its window [end of warm-up, stop]",
        ],
    );
    assert!(
        !text.contains("UDP:") && !text.contains("  open loop:"),
        "{text}"
    );
    assert_narrow(&text);

    // The longest latencies the histogram holds (100 s) still fit.
    let (spec, mut client, server) = tcp_rr_two();
    let slow = wirebench_stats::latency::LatencySummary {
        count: 3,
        clamped: 1,
        min_ns: 99_999_999_999,
        mean_ns: 99_999_999_999.0,
        stddev_ns: 99_999_999_999.0,
        p50_ns: 100_000_000_000,
        p90_ns: 100_000_000_000,
        p99_ns: 100_000_000_000,
        p999_ns: 100_000_000_000,
        p9999_ns: 100_000_000_000,
        max_ns: 100_000_000_000,
    };
    rr_mut(&mut client).latency = Some(slow);
    let s = summarize(&spec, &client, Some(&server), false);
    let text = print::human(&result_for(spec, vec![record(0, s)]));
    assert_contains(
        &text,
        &[
            // 99 999 999 999 ns is 100000000.0 µs to one decimal.
            "  latency µs: min 100000000.0 mean 100000000.0 stddev 100000000.0 p50 100000000.0 \
             p90 100000000.0\n              p99 100000000.0 p99.9 100000000.0 p99.99 \
             100000000.0 max 100000000.0\n",
            "  (1 round trips were outside the histogram's range and were clamped)",
        ],
    );
    assert_narrow(&text);
}

#[test]
fn human_open_loop_and_flow_errors() {
    let (mut spec, mut client, server) = tcp_rr_two();
    spec.workload = WorkloadSpec::Rr(RrSpec {
        pacing: RrLoop::Open {
            transactions_per_s: 10_000,
            max_outstanding: 100,
        },
        ..RrSpec::default()
    });
    for (f, missed) in rr_mut(&mut client).flows.iter_mut().zip([0, 2_000]) {
        f.open_loop = Some(wirebench_model::rr::OpenLoopCounts {
            slots_in_window: 20_000,
            sent_total: 30_000,
            missed_slots: missed,
            peak_outstanding: 7 + missed,
        });
    }
    rr_mut(&mut client).flows[1].error = Some(wirebench_model::warning::FlowError {
        step: wirebench_model::warning::Step::ResponseRead,
        cause: wirebench_model::warning::Cause::PeerClosed { mid_message: false },
    });
    let s = summarize(&spec, &client, Some(&server), false);
    let text = print::human(&result_for(spec, vec![record(0, s)]));
    assert_contains(
        &unwrapped(&text),
        &[
            "rr, request 1 bytes, response 1 bytes, open loop 10000 transactions/s per flow (at \
             most 100 outstanding); 2 flows",
            // Flow 1: 10 000 / 2 s = 5000/s of 10 000/s.
            "warning: flow 1: open loop behind schedule: 5000.0/s achieved of 10000.0/s \
             requested, 2000 slots never sent, peak outstanding 2007 (cap 100)",
        ],
    );
    assert_contains(
        &text,
        &[
            // 40 000 / 2 s achieved of 2 × 10 000 requested; 0 + 2000 missed; peak 2007.
            "  open loop: requested 20000.0/s, achieved 20000.0/s, missed slots 2000, peak \
             outstanding 2007",
            "  flow 1 at the client: reading a response: the peer closed the connection",
            "warning: flow 1 failed at the client: reading a response: the peer closed the \
             connection",
        ],
    );
    assert_narrow(&text);
}

#[test]
fn human_crr_and_udp_rr() {
    // CRR: one flow, abortive close.
    let spec = TestSpec::new(WorkloadSpec::Crr(CrrSpec {
        close_mode: CloseMode::Abortive,
        ..CrrSpec::default()
    }));
    let w = RrCounts {
        transactions: 5000,
        errors: 1,
        connect_errors: 2,
        ..RrCounts::default()
    };
    let mut client = rr_report(
        HostRole::Client,
        (S, 2 * S),
        vec![rr_flow(0, w, w, None)],
        None,
        None,
    );
    rr_mut(&mut client).close_mode = Some(CloseMode::Abortive);
    let st = RrCounts {
        transactions: 5000,
        closes_orderly: 1,
        closes_reset: 4999,
        ..RrCounts::default()
    };
    let server = rr_report(
        HostRole::Server,
        (S, 2 * S),
        vec![rr_flow(0, RrCounts::default(), st, None)],
        None,
        None,
    );
    let s = summarize(&spec, &client, Some(&server), false);
    let text = print::human(&result_for(spec, vec![record(0, s)]));
    assert_contains(
        &unwrapped(&text),
        &[
            "crr, request 1 bytes, response 1 bytes, abortive close (RST); 1 flow, 10.000 s \
           measured",
        ],
    );
    assert_contains(
        &text,
        &[
            "TCP CRR: 5000 transactions in 1.000 s = 5000.0 transactions/s (1 flow)",
            "  latency: not measured",
            "  connections: close abortive (RST); errors 1 (connect 2) in the window",
            "  server saw 1 orderly closes and 4999 resets",
            "  whole test: client completed 5000 transactions, server answered 5000",
            "congestion control in use: not reported (requested: each host's default)",
            "warning: client: no CPU figures",
        ],
    );
    // One flow: no per-flow table.
    assert!(!text.contains("trans/s      p50"), "{text}");
    assert_narrow(&text);

    // UDP RR: the loss line; no socket buffer or congestion line.
    let mut spec = TestSpec::new(WorkloadSpec::UdpRr(UdpRrSpec::default()));
    spec.common.flows = 1;
    let w = RrCounts {
        transactions: 975,
        lost: 25,
        late: 4,
        garbage: 1,
        ..RrCounts::default()
    };
    let client = rr_report(
        HostRole::Client,
        (S, 2 * S),
        vec![rr_flow(0, w, w, Some(latency(975, 30_000, 70_000)))],
        Some(latency(975, 30_000, 70_000)),
        None,
    );
    let s = summarize(&spec, &client, None, false);
    let text = print::human(&result_for(spec, vec![record(0, s)]));
    // No socket buffers in the test line of a UDP workload.
    assert_contains(
        &unwrapped(&text),
        &[
            "udp rr, request 8 bytes, response 8 bytes, lost after 100 ms; 1 flow, 10.000 s \
           measured after 0.000 s warm-up run 1 of 1",
        ],
    );
    assert_contains(
        &text,
        &[
            "UDP RR: 975 transactions in 1.000 s = 975.0 transactions/s (1 flow)",
            // 25 / 1000 = 2.5 %.
            "  UDP: lost 25 (2.500 %), of which answered late 4; garbage 1; errors 0",
            "  whole test: client completed 975 transactions, server answered n/a",
            "warning: server: no report received",
        ],
    );
    assert!(!text.contains("congestion control"), "{text}");
    assert_narrow(&text);
}

// ───── human: UDP stream ─────

#[test]
fn human_udp_stream() {
    let (spec, client, server) = udp_forward_one();
    let s = summarize(&spec, &client, Some(&server), false);
    let text = print::human(&result_for(spec, vec![record(0, s)]));
    assert_contains(
        &unwrapped(&text),
        &[
            "udp forward, 1000 bytes per datagram, 8.000 Mbit/s per flow; 1 flow per direction, \
             2.000 s measured after 1.000 s warm-up",
            "UDP forward: sender 8.000 Mbit/s, receiver 7.800 Mbit/s over 2.000 s; 1 flow, 1000 \
             bytes per datagram",
        ],
    );
    assert_contains(
        &text,
        &[
            "  window: sent 2000 received 1950 lost 50 (2.500 %); late 5 duplicate 3 too old 1; \
             send errors 2",
            "  whole test: sent 2500 received 2440 lost 60; jitter (max of flows) 12.35 µs; \
             invalid datagrams 10",
        ],
    );
    // The loss attribution: 2500 + 10 − 2440 = 70 = 10 + 20 + 15 + 25.
    assert_contains(
        &text,
        &[
            "  lost over the whole test:         70  = refused at the sender 10
                                        + dropped at the receiving sockets 20
                                        + dropped by the receiving host 15
                                        + lost in the path 25
",
        ],
    );
    assert_contains(
        &unwrapped(&text),
        &["loss attribution over the whole test: refused at the sender (ENOBUFS/EAGAIN)"],
    );
    assert!(!text.contains("congestion control"), "{text}");
    assert!(!text.contains("fell behind"), "{text}");
    assert_narrow(&text);

    // Without the server's report: unknown attributions say so.
    let (spec, client, _) = udp_forward_one();
    let s = summarize(&spec, &client, None, false);
    let text = print::human(&result_for(spec, vec![record(0, s)]));
    let flat = unwrapped(&text);
    assert_contains(
        &flat,
        &[
            "dropped at the receiving sockets not reported",
            "dropped by the receiving host not reported",
            "lost in the path 2500",
            "warning: UDP flow 0: the receiver's report is missing",
        ],
    );
    assert_narrow(&text);
}

#[test]
fn human_udp_many_flows_pacing_and_errors() {
    let (spec, mut client, mut server) = udp_forward_one();
    let spec = with_flows(spec, 2);
    let mut snd = udp_sender(1, 1000, (S, 3 * S), 2000, 2000);
    snd.pacing_resets = 4;
    snd.error = Some(wirebench_model::warning::FlowError {
        step: wirebench_model::warning::Step::Send,
        cause: wirebench_model::warning::Cause::TimedOut { after_ms: 10 },
    });
    udp_mut(&mut client).senders.push(snd);
    let mut rcv = udp_receiver(1, 1000, 2000, 2000);
    rcv.jitter_ns = 2_500_000.0;
    udp_mut(&mut server).receivers.push(rcv);
    let s = summarize(&spec, &client, Some(&server), false);
    let text = print::human(&result_for(spec, vec![record(0, s)]));
    let flat = unwrapped(&text);
    assert_contains(
        &flat,
        &[
            // 4e6 B × 8 / 2 s sent; 3.95e6 B received.
            "UDP forward: sender 16.00 Mbit/s, receiver 15.80 Mbit/s over 2.000 s; 2 flows",
            "flow 0: 7.800 Mbit/s received; sent 2000 received 1950 lost 50 (2.500 %)",
            "flow 1: 8.000 Mbit/s received; sent 2000 received 2000 lost 0 (0.000 %)",
            "jitter 2.500 ms",
            "the sender fell behind its schedule 4 times (rate not met then)",
            "flow 1 at the client: sending: nothing arrived within 10 ms",
        ],
    );
    assert_narrow(&text);
}

/// A refusal whose message already names the limit's flag does not name it again; one that
/// does not gets the flag appended.
#[test]
fn a_limit_named_in_the_message_is_not_named_twice() {
    let mut e = ErrorInfo::new(
        ErrorKind::Busy,
        "server busy for this client: it already runs 1 of the 1 tests one peer may run at \
         once (`serve --max-tests-per-peer`); retry in 500 ms",
    );
    e.limit = Some(LimitName::MaxTestsPerPeer);
    let t = wirebench_report::print::error_text(&e);
    assert_eq!(t.matches("--max-tests-per-peer").count(), 1, "{t}");
    assert!(!t.contains("  "), "{t}");
    e.message = "server busy".into();
    let t = wirebench_report::print::error_text(&e);
    assert!(
        t.ends_with("(the server's limit `serve --max-tests-per-peer`)"),
        "{t}"
    );
}

// ───── verdict ─────

/// A CPU the hypervisor took: the limiter and the evidence say how much, and what to try is
/// a machine whose CPUs are not shared; a CPU with less than a percent stolen says nothing
/// about steal.
#[test]
fn the_hosts_steal_is_worded_with_its_share() {
    use wirebench_model::verdict::{Evidence, Limiter, Suggestion, Verdict};
    let busiest = |steal_pct| Evidence::BusiestCpu {
        host: HostRole::Client,
        cpu: 1,
        busy_pct: 100.0,
        softirq_pct: 3.0,
        cpus_used: vec![1],
        threads_util_pct_of_one_cpu: Some(48.0),
        threads_run_delay_pct: None,
        steal_pct,
    };
    let v = Verdict {
        limiter: Limiter::HostSteal {
            host: Some(HostRole::Client),
            cpu: 1,
            busy_pct: 100.0,
            steal_pct: 51.0,
            threads_util_pct_of_one_cpu: 48.0,
        },
        evidence: vec![busiest(Some(51.0))],
        suggestions: vec![Suggestion::DedicatedCpus],
        missing: Vec::new(),
    };
    let lines = print::verdict::lines(&v);
    let text = |key: &str| {
        lines
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, l)| l.clone())
            .unwrap_or_else(|| panic!("no {key:?} in {lines:?}"))
    };
    let limiter = text("verdict: limited by ");
    assert!(
        limiter
            .starts_with("the host beneath this virtual machine: CPU 1 100 % busy, of which 51 %")
            && limiter.contains("the client's threads used 48.0 % of one CPU"),
        "{limiter}"
    );
    assert!(
        text("evidence: ")
            .contains("busiest CPU 1 100 % (3 % softirq, 51 % taken by the hypervisor)"),
        "{lines:?}"
    );
    assert!(text("to test it: ").starts_with("a virtual machine with dedicated CPUs"));
    // Under a percent (or a result recorded before steal was kept): no word of it.
    for steal in [Some(0.4), None] {
        let e = print::verdict::lines(&Verdict {
            evidence: vec![busiest(steal)],
            ..v.clone()
        });
        assert!(
            e.iter()
                .any(|(_, l)| l.contains("busiest CPU 1 100 % (3 % softirq); its threads")),
            "{e:?}"
        );
    }
}

/// A profile with unsampled busy time on a host whose hypervisor took CPU time: the human
/// text says how much `/proc/stat` counted stolen over the same CPUs; without steal it
/// says nothing of it.
#[test]
fn unsampled_busy_time_names_what_the_hypervisor_took() {
    use wirebench_model::profile::{
        CategoryProfile, CpuProfile, KernelSymbols, ProfileCategory, ProfileEvent, ProfileReport,
    };
    let (spec, mut client, server) = forward_two();
    let window_ns = 1_000_000_000u64;
    let cpus: Vec<u32> = (0..4).collect();
    // Each CPU: half the window sampled busy (other), half unsampled busy.
    let half = window_ns / 2;
    let ns = |k: ProfileCategory| -> u64 {
        match k {
            ProfileCategory::Other | ProfileCategory::Unsampled => half,
            _ => 0,
        }
    };
    let per_cpu_ns: Vec<u64> = ProfileCategory::ALL.iter().map(|&k| ns(k)).collect();
    client.profile = Some(ProfileReport {
        event: ProfileEvent::CpuClock,
        freq_hz: 4000,
        period: 250_000,
        cpus: cpus.clone(),
        window_ns,
        samples: 4 * 2000,
        lost_samples: 0,
        throttled: 0,
        unsampled_idle_ns: 0,
        unsampled_busy_ns: 4 * half,
        oversampled_busy_ns: 0,
        idle_from_proc_stat: true,
        kernel_symbols: KernelSymbols::Resolved,
        categories: ProfileCategory::ALL
            .iter()
            .map(|&k| CategoryProfile {
                category: k,
                samples: if k == ProfileCategory::Other { 8000 } else { 0 },
                wirebench_samples: 0,
                cpu_ns: 4 * ns(k),
                pct: 100.0 * ns(k) as f64 / window_ns as f64,
                top_symbols: Vec::new(),
            })
            .collect(),
        per_cpu: cpus
            .iter()
            .map(|&cpu| CpuProfile {
                cpu,
                samples: 2000,
                unsampled_idle_ns: 0,
                unsampled_busy_ns: half,
                oversampled_busy_ns: 0,
                cpu_ns: per_cpu_ns.clone(),
            })
            .collect(),
    });
    let text_with_steal = |steal_pct: f64| {
        let mut s = summarize(&spec, &client, Some(&server), true);
        let c = s
            .cpu
            .iter_mut()
            .find(|c| c.host == HostRole::Client)
            .unwrap();
        assert_eq!(c.cpus, 4);
        c.system.steal_pct = steal_pct;
        let mut run = record(0, s);
        run.client = Some(client.clone());
        unwrapped(&print::human(&result_for(spec.clone(), vec![run])))
    };
    let text = text_with_steal(25.0);
    assert!(text.contains("unsampled busy: 2.000 s"), "{text}");
    // A quarter of the client's CPU window (its figures' window × 4 CPUs) stolen.
    let s = summarize(&spec, &client, Some(&server), true);
    let c = s.cpu.iter().find(|c| c.host == HostRole::Client).unwrap();
    let stolen_s = 0.25 * c.window_ns as f64 * 4.0 / 1e9;
    assert!(
        text.contains(&format!(
            "of the window's CPU time, /proc/stat counted {stolen_s:.3} s stolen: the \
             hypervisor ran something else on these virtual CPUs (steal)"
        )),
        "{text}"
    );
    let text = text_with_steal(0.0);
    assert!(text.contains("unsampled busy: 2.000 s"), "{text}");
    assert!(!text.contains("stolen"), "{text}");
}
