//! `wirebench stream --iperf3` and `udp --iperf3` against Debian's stock `iperf3 -s`
//! (installed by .ci/run) in a namespace pair: wirebench's own counts against the iperf3
//! server's (from the results exchange, and from the server's own `-J` output), and both
//! against the receiving veth interface's counters (TCP) or nftables counters on the UDP
//! datagrams (UDP); a busy server, and `--retry`; the flags refused against iperf3.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;
use wirebench_lab::{Side, Testbed, ADDR_B, IF_A, IF_B};
use wirebench_model::result::WorkloadSummary;

/// iperf3 is there (CI requires it).
fn have_iperf3() -> bool {
    wirebench_sys::require::capability(
        "iperf3",
        wirebench_sys::require::command_works("iperf3", "--version"),
        "the iperf3 command (apt-get install iperf3)",
    )
}

/// Start `iperf3 -s` (with `args`) on side B, bound to its address and `port`, and wait
/// until it listens (watching `ss`, not connecting: a bare connect makes iperf3 3.12 restart).
fn iperf3_server(tb: &Testbed, port: u16, args: &[&str]) -> Guarded {
    let mut c = tb.command(Side::B, "iperf3");
    c.args(["-s", "-B", ADDR_B, "-p", &port.to_string()])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let g = Guarded::spawn(&mut c);
    let until = Instant::now() + Duration::from_secs(10);
    let want = format!("{ADDR_B}:{port}");
    while Instant::now() < until {
        let ss = tb.exec(Side::B, &["ss", "-Hltn"]).unwrap_or_default();
        if ss.contains(&want) {
            return g;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("iperf3 -s did not listen on {want}");
}

/// TCP connections established toward `port` on side B.
fn established(tb: &Testbed, port: u16) -> usize {
    let ss = tb
        .exec(Side::B, &["ss", "-Htn", "state", "established"])
        .unwrap_or_default();
    ss.lines()
        .filter(|l| l.contains(&format!("{ADDR_B}:{port} ")))
        .count()
}

/// Per flow of this end's report: (flow, role, total bytes).
fn client_flows(r: &serde_json::Value) -> Vec<(u64, String, u64)> {
    r["runs"][0]["client"]["data"]["stream"]["flows"]
        .as_array()
        .expect("a stream report")
        .iter()
        .map(|f| {
            (
                f["flow"].as_u64().unwrap(),
                f["role"].as_str().unwrap().to_string(),
                f["total_bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The most a packet's headers take on this veth: Ethernet 14, IPv4 20 (no options), TCP 60
/// (the largest header TCP allows). A GRO-merged packet carries one set of headers, so this
/// bounds per counted packet either way.
const MAX_HEADERS: u64 = 14 + 20 + 60;

/// The largest TCP payload of one segment at MTU 1500 (IPv4 and TCP headers of 20 each).
const MAX_MSS: u64 = 1500 - 20 - 20;

/// Control-connection and cookie bytes, at most (cookie 37 per connection, parameters and
/// results JSON well under 2 KiB each, state bytes).
const CONTROL_SLACK: u64 = 8192;

/// Forward, reverse and two streams against a one-off `iperf3 -s -1` each: wirebench's
/// counts per flow against the server's (results exchange and the server's own `-J`
/// output), and against the receiving interface's counters.
#[test]
fn stream_iperf3_against_a_stock_server_reconciles() {
    if !have_iperf3() {
        return;
    }
    require_netns();
    let _g = serial();
    let tb = Testbed::pair(1500).expect("testbed");
    let cases: &[(&[&str], u16)] = &[
        (&["-t", "1"], 5201),
        (&["-t", "1", "-R"], 5311),
        (&["-t", "1", "-P", "2", "-l", "128K"], 5312),
    ];
    let rmem = tb
        .exec(Side::B, &["cat", "/proc/sys/net/ipv4/tcp_rmem"])
        .expect("tcp_rmem");
    let rmem_max: u64 = rmem
        .split_whitespace()
        .last()
        .and_then(|v| v.parse().ok())
        .expect("tcp_rmem's max");
    for (args, port) in cases {
        let server = iperf3_server(&tb, *port, &["-1", "-J"]);
        let reverse = args.contains(&"-R");
        let recv_if = if reverse {
            (Side::A, IF_A)
        } else {
            (Side::B, IF_B)
        };
        let before = tb.counters(recv_if.0, recv_if.1).unwrap();
        let mut c = tb.command(Side::A, BIN);
        c.args(["stream", "--iperf3", "-H", ADDR_B, "-J"])
            .args(*args);
        if *port != 5201 {
            c.args(["-p", &port.to_string()]);
        }
        let ran = finish(c);
        let after = tb.counters(recv_if.0, recv_if.1).unwrap();
        let out = server.wait_with_output();
        assert_eq!(ran.code, 0, "{args:?}: {}\n{}", ran.stdout, ran.stderr);
        let r: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
        let srv: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "iperf3 -s -J ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        assert_eq!(r["status"], "completed", "{args:?}: {r}");
        let run = &r["runs"][0];
        assert!(run["server"].is_null(), "no wirebench server report: {run}");
        assert!(run["client"]["cpu"].is_object(), "this end's CPU: {run}");
        let i3 = &run["iperf3"];
        assert_eq!(i3["address"], format!("{ADDR_B}:{port}"));
        assert!(i3["cpu_util_total_pct"].as_f64().unwrap() > 0.0, "{i3}");
        let flows = client_flows(&r);
        let streams = i3["streams"].as_array().unwrap();
        let rec = i3["reconciliation"].as_array().unwrap();
        assert_eq!(flows.len(), if args.contains(&"2") { 2 } else { 1 });
        assert_eq!(streams.len(), flows.len(), "{i3}");
        assert_eq!(rec.len(), flows.len(), "{i3}");
        // The results exchange and iperf3's own output are the same counts.
        let srv_end = &srv["end"];
        let theirs: u64 = streams.iter().map(|s| s["bytes"].as_u64().unwrap()).sum();
        let ours: u64 = flows.iter().map(|f| f.2).sum();
        // (3.12's server prints only its own side; the client's figures stay 0 there.)
        let srv_own = if reverse {
            &srv_end["sum_sent"]
        } else {
            &srv_end["sum_received"]
        };
        assert_eq!(
            srv_own["bytes"].as_u64(),
            Some(theirs),
            "{args:?}: {srv_end}"
        );
        for (f, x) in flows.iter().zip(rec) {
            assert_eq!(x["flow"].as_u64(), Some(f.0));
            assert_eq!(x["wirebench_bytes"].as_u64(), Some(f.2));
            let stream = streams
                .iter()
                .find(|s| s["flow"].as_u64() == Some(f.0))
                .unwrap_or_else(|| panic!("a stream for flow {}: {i3}", f.0));
            let iperf3 = stream["bytes"].as_u64().unwrap();
            assert_eq!(x["iperf3_bytes"].as_u64(), Some(iperf3));
            assert!(iperf3 > 1_000_000, "{args:?}: a real transfer: {i3}");
            if reverse {
                // The server closes after its last write: everything it sent arrives.
                assert_eq!(f.1, "receiver");
                assert_eq!(f.2, iperf3, "{args:?}: received vs iperf3's sent: {i3}");
                assert_eq!(x["note"], "equal");
            } else {
                // TEST_END goes once every byte is acknowledged; iperf3 closes its sockets
                // at TEST_END without reading what is still queued in them: at most the
                // largest receive buffer the server's kernel gives a socket (tcp_rmem's max).
                assert_eq!(f.1, "sender");
                assert!(
                    iperf3 <= f.2,
                    "{args:?}: iperf3 read more than was sent: {i3}"
                );
                let unread = f.2 - iperf3;
                assert!(
                    unread <= rmem_max,
                    "{args:?}: {unread} B unread > tcp_rmem max {rmem_max}: {i3}"
                );
                let want = if iperf3 == f.2 {
                    "equal"
                } else {
                    "unread_at_test_end"
                };
                assert_eq!(x["note"], want, "{x}");
            }
        }
        // The receiving interface saw every payload byte the sender's kernel acknowledged
        // (forward) or the receiver read (reverse), plus at most the headers and the control.
        let payload = ours;
        let rx = after.rx_bytes - before.rx_bytes;
        let packets = after.rx_packets - before.rx_packets;
        assert!(
            rx >= payload,
            "{args:?}: {rx} B on the wire < {payload} B of payload"
        );
        // Retransmitted segments cross the wire again: the sender's TCP_INFO count (this
        // end's, forward; iperf3's own, from its results, reverse), each at most one MSS.
        let retrans: u64 = if reverse {
            streams
                .iter()
                .filter_map(|s| s["retransmits"].as_u64())
                .sum()
        } else {
            let typed = wirebench_model::result::RunResult::from_json(&ran.stdout).unwrap();
            match typed.runs[0].summary.as_ref().map(|s| &s.workload) {
                Some(WorkloadSummary::Stream(st)) => {
                    st.directions.iter().map(|d| d.retransmits).sum()
                }
                _ => panic!("{args:?}: no stream summary"),
            }
        };
        let bound = payload + packets * MAX_HEADERS + retrans * MAX_MSS + CONTROL_SLACK;
        assert!(
            rx <= bound,
            "{args:?}: {rx} B on the wire > {bound} B bound ({packets} packets, {retrans} \
             segments retransmitted)"
        );
    }
}

/// The human output shows both tools' figures and the reconciliation line; a server-supplied
/// string (its congestion control name) is printed escaped.
#[test]
fn stream_iperf3_human_output_shows_both_ends() {
    if !have_iperf3() {
        return;
    }
    require_netns();
    let _g = serial();
    let tb = Testbed::pair(1500).expect("testbed");
    let server = iperf3_server(&tb, 5201, &["-1"]);
    let ran = wb_in(
        &tb,
        Side::A,
        &[
            "stream", "--iperf3", "-H", ADDR_B, "-t", "0.5", "-b", "200M",
        ],
    );
    drop(server);
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    // The server's end (the receiver, forward) has no wirebench report: its columns are
    // "-", not 0; the sender's (this end's) are figures.
    let total = ran
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("total forward"))
        .unwrap_or_else(|| panic!("no total row in:\n{}", ran.stdout));
    let cells: Vec<&str> = total.split_whitespace().collect();
    assert_eq!(
        cells[2], "-",
        "receiver rate of the unreported end: {total}"
    );
    assert_ne!(cells[3], "-", "this end's send rate: {total}");
    assert!(cells[3].parse::<f64>().unwrap() > 0.0, "{total}");
    for needle in [
        "iperf3 server 10.203.0.2:5201 (its own figures",
        "stream 1 (flow 0): server received",
        "server CPU:",
        "reconciliation (bytes each end counted on each flow):",
        "flow 0 forward: wirebench sent",
    ] {
        assert!(
            ran.stdout.contains(needle),
            "{needle:?} in:\n{}",
            ran.stdout
        );
    }
    assert!(!ran.stdout.contains("no report received"), "{}", ran.stdout);
}

/// A second client while a test runs is told the server is busy; with --retry it runs once
/// the first test is over.
#[test]
fn a_busy_iperf3_server_and_retry() {
    if !have_iperf3() {
        return;
    }
    require_netns();
    let _g = serial();
    let tb = Testbed::pair(1500).expect("testbed");
    let port = 5313u16;
    let mut server = iperf3_server(&tb, port, &[]);
    let p = port.to_string();
    let cmd = |kind: &str, extra: &[&str]| {
        let mut c = tb.command(Side::A, BIN);
        c.args([kind, "--iperf3", "-H", ADDR_B, "-p", &p, "-q"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    let args = |extra: &[&str]| cmd("stream", extra);
    let first = Guarded::spawn(&mut args(&["-t", "2", "-b", "100M"]));
    let until = Instant::now() + Duration::from_secs(10);
    while established(&tb, port) < 2 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(established(&tb, port) >= 2, "the first test did not start");
    let busy = finish(args(&["-t", "0.5"]));
    assert_ne!(busy.code, 0);
    let want = format!("iperf3 server {ADDR_B}:{port} is busy with another test (attempt 1 of 1)");
    assert!(busy.stderr.contains(&want), "{}", busy.stderr);
    // The same for a UDP test.
    let busy = finish(cmd("udp", &["-t", "0.5"]));
    assert_ne!(busy.code, 0);
    assert!(busy.stderr.contains(&want), "udp: {}", busy.stderr);
    let retried = finish(args(&["-t", "0.5", "--retry", "10"]));
    let udp_retried = finish(cmd("udp", &["-t", "0.5", "-b", "10M", "--retry", "10"]));
    let first = first.wait_with_output();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(retried.code, 0, "{}\n{}", retried.stdout, retried.stderr);
    assert_eq!(
        udp_retried.code, 0,
        "{}\n{}",
        udp_retried.stdout, udp_retried.stderr
    );
    assert!(
        retried
            .stderr
            .contains("is busy with another test (attempt 1 of 11)"),
        "{}",
        retried.stderr
    );
    let _ = server.child().kill();
}

/// Flags that set the server's end, or speak wirebench's own protocol, are refused before
/// anything runs, naming each, by `stream --iperf3` and `udp --iperf3`.
#[test]
fn flags_without_meaning_against_iperf3_are_refused() {
    let _g = shared();
    let ran = wb(&[
        "stream",
        "--iperf3",
        "-H",
        "127.0.0.1",
        "--verify",
        "--threads",
        "2",
        "-A",
        "0,1",
    ]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    for flag in ["--verify", "--threads", "-A with a remote CPU"] {
        assert!(ran.stderr.contains(flag), "{flag}: {}", ran.stderr);
    }
    let ran = wb(&["stream", "--iperf3"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    let ran = wb(&["stream", "--iperf3", "-H", "127.0.0.1", "--warmup", "0.5"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(ran.stderr.contains("whole seconds"), "{}", ran.stderr);
    let ran = wb(&[
        "udp",
        "--iperf3",
        "-H",
        "127.0.0.1",
        "--dont-fragment",
        "--fq-rate",
        "1G",
        "--profile",
    ]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    for flag in ["--dont-fragment", "--fq-rate", "--profile"] {
        assert!(ran.stderr.contains(flag), "udp {flag}: {}", ran.stderr);
    }
    let ran = wb(&["udp", "--iperf3", "-H", "127.0.0.1", "--warmup", "0.5"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(ran.stderr.contains("whole seconds"), "{}", ran.stderr);
}

/// `InErrors` and `RcvbufErrors` of `side`'s namespace (/proc/net/snmp's Udp line).
fn udp_snmp(tb: &Testbed, side: Side) -> (u64, u64) {
    let snmp = tb.exec(side, &["cat", "/proc/net/snmp"]).unwrap();
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp: "));
    let (names, values) = (udp.next().unwrap(), udp.next().unwrap());
    let get = |name: &str| -> u64 {
        let at = names.split_whitespace().position(|n| n == name).unwrap();
        values.split_whitespace().nth(at).unwrap().parse().unwrap()
    };
    (get("InErrors"), get("RcvbufErrors"))
}

/// `udp --iperf3 -b 50M -l 1400 -t 1` against a one-off `iperf3 -s -1`, forward and `-R`,
/// each without and with an nftables rule on the receiving namespace's input hook that
/// drops 2 % of the test's datagrams (UDP length 1408: not the 4-byte connect datagram or
/// its reply) at random and counts them. Every datagram the sender sent is accounted for:
/// - all of them reach the receiving input hook (its counter = the sender's count; nothing
///   was refused at the sender);
/// - there it is dropped by the rule, or dropped by the receiving host's UDP layer (its
///   namespace's `InErrors`, which include `RcvbufErrors`), or received: the receiver's
///   count (iperf3's, forward, from the results exchange; wirebench's, reverse) is exactly
///   the rest (so none was left unread when the test ended);
/// - the receiver's lost count plus the datagrams sent after the last one it saw (the
///   reconciliation's difference) is exactly the rule's drops plus the host's, and
///   sent = received + lost + difference.
#[test]
fn udp_iperf3_against_a_stock_server_accounts_for_every_datagram() {
    if !have_iperf3() {
        return;
    }
    require_netns();
    let _g = serial();
    let tb = Testbed::pair(1500).expect("testbed");
    let cases: &[(bool, u32, u16)] = &[
        (false, 0, 5321),
        (true, 0, 5322),
        (false, 20, 5323),
        (true, 20, 5324),
    ];
    for &(reverse, per_mille, port) in cases {
        let rx_side = if reverse { Side::A } else { Side::B };
        crate::rr_udp::nft(
            &tb,
            rx_side,
            &format!(
                "table inet wbic\ndelete table inet wbic\ntable inet wbic {{\n chain input {{\n  \
                 type filter hook input priority 0;\n  udp length 1408 counter\n  \
                 udp length 1408 numgen random mod 1000 < {per_mille} counter drop\n }}\n}}\n"
            ),
        );
        let server = iperf3_server(&tb, port, &["-1"]);
        let snmp_before = udp_snmp(&tb, rx_side);
        let mut c = tb.command(Side::A, BIN);
        let p = port.to_string();
        c.args(["udp", "--iperf3", "-H", ADDR_B, "-p", &p, "-J"])
            .args(["-b", "50M", "-l", "1400", "-t", "1"]);
        if reverse {
            c.arg("-R");
        }
        let ran = finish(c);
        let snmp_after = udp_snmp(&tb, rx_side);
        let _ = server.wait_with_output();
        let case = format!("reverse {reverse}, drop {per_mille}/1000");
        assert_eq!(ran.code, 0, "{case}: {}\n{}", ran.stdout, ran.stderr);
        let counts =
            crate::iperf3::nft_counts(&crate::rr_udp::nft(&tb, rx_side, "list table inet wbic\n"));
        let [arrived, dropped] = counts[..] else {
            panic!("nft counters: {counts:?}")
        };
        let host_drops = snmp_after.0 - snmp_before.0;
        let r: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
        assert_eq!(r["status"], "completed", "{case}: {r}");
        let run = &r["runs"][0];
        let mine = &run["client"]["data"]["udp_stream"];
        let i3 = &run["iperf3"];
        let rec = &i3["reconciliation"][0]["udp"];
        let stream = &i3["streams"][0];
        let n = |v: &serde_json::Value| v.as_u64().unwrap_or_else(|| panic!("{case}: {v}"));
        eprintln!(
            "{case}: nft arrived {arrived} dropped {dropped}; host drops {host_drops}; \
             reconciliation {rec}; server stream {stream}"
        );
        let (sent, received, lost) = (
            n(&rec["sent_datagrams"]),
            n(&rec["received_datagrams"]),
            n(&rec["lost_datagrams"]),
        );
        let difference = rec["difference_datagrams"].as_i64().unwrap();
        assert!(sent > 4000, "{case}: 50 Mbit/s for 1 s: {sent}");
        assert_eq!(dropped > 0, per_mille > 0, "{case}: dropped {dropped}");
        if reverse {
            let rx = &mine["receivers"][0];
            assert_eq!(n(&rx["datagrams_received"]), received, "{case}");
            assert_eq!(n(&rx["bytes_received"]), received * 1400, "{case}");
            assert_eq!(n(&stream["udp"]["packets"]), sent, "{case}: iperf3's count");
            assert_eq!(stream["role"], "sender", "{case}");
        } else {
            let tx = &mine["senders"][0];
            assert_eq!(n(&tx["send_refused"]), 0, "{case}");
            assert_eq!(n(&tx["datagrams_sent"]), sent, "{case}");
            assert_eq!(stream["role"], "receiver", "{case}");
            let u = &stream["udp"];
            assert_eq!(n(&u["lost"]), lost, "{case}: iperf3's lost");
            assert_eq!(n(&u["packets"]) - lost, received, "{case}");
            assert_eq!(n(&stream["bytes"]), received * 1400, "{case}");
            assert!(u["jitter_ms"].as_f64().unwrap() >= 0.0, "{case}");
        }
        assert_eq!(
            arrived, sent,
            "{case}: every datagram reached the input hook"
        );
        assert_eq!(
            received,
            arrived - dropped - host_drops,
            "{case}: received = arrived - dropped by the rule - dropped by the host"
        );
        assert_eq!(
            i64::try_from(lost).unwrap() + difference,
            i64::try_from(dropped + host_drops).unwrap(),
            "{case}: lost + sent after the last seen = dropped"
        );
        assert_eq!(
            i64::try_from(sent).unwrap(),
            i64::try_from(received + lost).unwrap() + difference,
            "{case}"
        );
        let note = &i3["reconciliation"][0]["note"];
        let want = if difference == 0 {
            "datagrams_accounted"
        } else {
            "sent_after_last_seen"
        };
        assert_eq!(note, want, "{case}");
    }
}

/// The human output of `udp --iperf3` (with 64-bit sequence numbers, which the server must
/// read to see every datagram): this end's figures as the sender, the server's as the
/// receiver, and the reconciliation line, every datagram accounted for.
#[test]
fn udp_iperf3_human_output_shows_both_ends() {
    if !have_iperf3() {
        return;
    }
    require_netns();
    let _g = serial();
    let tb = Testbed::pair(1500).expect("testbed");
    let server = iperf3_server(&tb, 5325, &["-1"]);
    let mut c = tb.command(Side::A, BIN);
    c.args(["udp", "--iperf3", "-H", ADDR_B, "-p", "5325"])
        .args(["-t", "0.5", "-b", "20M", "--udp-counters-64bit"]);
    let ran = finish(c);
    let _ = server.wait_with_output();
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    let head = format!("iperf3 server {ADDR_B}:5325 (its own figures");
    for want in [
        "UDP forward (wirebench's figures as the sender):",
        &head,
        "server received",
        "highest sequence",
        "reconciliation (datagrams, whole test: sent; received + lost at the receiver):",
        "flow 0 forward: wirebench sent ",
        "difference +0:",
    ] {
        assert!(ran.stdout.contains(want), "{want}: {}", ran.stdout);
    }
    assert!(!ran.stdout.contains("report is missing"), "{}", ran.stdout);
    assert!(!ran.stdout.contains("receiver 0.000"), "{}", ran.stdout);
}
