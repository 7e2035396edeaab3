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
    let _g = shared();
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
    let _g = shared();
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
    let _g = shared_timed();
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
    let ran = wb(&["udp", "--iperf3", "-H", "127.0.0.1", "--warmup", "1"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("no datagram could be accounted for exactly"),
        "{}",
        ran.stderr
    );
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
    let _g = shared();
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
        // The summary counts the server's end from its figures, not as an end that
        // received (or sent) nothing: received and lost as the nft counters say.
        let dir = &run["summary"]["workload"]["udp_stream"]["directions"][0];
        let iperf3_role = if reverse { "sender" } else { "receiver" };
        assert_eq!(dir["iperf3_end"], iperf3_role, "{case}: {dir}");
        assert_eq!(n(&dir["counts"]["total_sent"]), sent, "{case}: {dir}");
        assert_eq!(
            n(&dir["counts"]["total_received"]),
            received,
            "{case}: {dir}"
        );
        assert_eq!(
            n(&dir["loss"]["total_lost"]),
            dropped + host_drops,
            "{case}: every datagram the rule or the host dropped, and no other: {dir}"
        );
        assert!(
            dir["receiver_rate_bps"].as_f64().unwrap() > 0.0,
            "{case}: {dir}"
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
    let _g = shared();
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

/// Payload bytes that arrived at `side`'s veth during `f` (received bytes less at most the
/// headers of every received packet; a lower bound of what crossed).
fn rx_during<T>(tb: &Testbed, side: Side, f: impl FnOnce() -> T) -> (T, u64, u64) {
    let ifname = if side == Side::A { IF_A } else { IF_B };
    let before = tb.counters(side, ifname).unwrap();
    let out = f();
    let after = tb.counters(side, ifname).unwrap();
    (
        out,
        after.rx_bytes - before.rx_bytes,
        after.rx_packets - before.rx_packets,
    )
}

/// `--bidir`, `-n` and `--warmup` (iperf3's `-O`) against a stock `iperf3 -s -1 -J`:
/// - `--bidir`: one flow each way, each reconciled with the server's results exchange and
///   its own `-J` output, and each direction's receiving interface saw at least its bytes;
/// - `-n 30M`: this end sent exactly 31,457,280 bytes, and the server counted them (less at
///   most what it left unread at TEST_END: tcp_rmem's max);
/// - `--warmup 1 -t 1 -b 200M`: the server omitted its first second (its `-J` says so), and
///   this end's count is the measured second only: between 30 % and 70 % of the payload the
///   receiving interface saw over both seconds (at a paced 200 Mbit/s each second carries
///   half), and within 20 % of the server's own post-omit count (each end starts counting on
///   its own clock).
#[test]
fn stream_iperf3_bidir_bytes_and_omit_against_a_stock_server() {
    if !have_iperf3() {
        return;
    }
    require_netns();
    let _g = shared();
    let tb = Testbed::pair(1500).expect("testbed");
    let rmem_max: u64 = tb
        .exec(Side::B, &["cat", "/proc/sys/net/ipv4/tcp_rmem"])
        .expect("tcp_rmem")
        .split_whitespace()
        .last()
        .and_then(|v| v.parse().ok())
        .expect("tcp_rmem's max");
    let run = |port: u16, args: &[&str]| -> (serde_json::Value, serde_json::Value) {
        let server = iperf3_server(&tb, port, &["-1", "-J"]);
        let ran = wb_in(
            &tb,
            Side::A,
            &[
                &[
                    "stream",
                    "--iperf3",
                    "-H",
                    ADDR_B,
                    "-J",
                    "-p",
                    &port.to_string(),
                ],
                args,
            ]
            .concat(),
        );
        let out = server.wait_with_output();
        assert_eq!(ran.code, 0, "{args:?}: {}\n{}", ran.stdout, ran.stderr);
        let srv = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("iperf3 -J ({e}): {}", String::from_utf8_lossy(&out.stdout))
        });
        (serde_json::from_str(&ran.stdout).unwrap(), srv)
    };

    // --bidir: flow 0 this end sends, flow 1 it receives.
    let (((r, srv), rx_b, _), rx_a, _) = rx_during(&tb, Side::A, || {
        rx_during(&tb, Side::B, || run(5321, &["--bidir", "-t", "1"]))
    });
    assert_eq!(r["status"], "completed", "{r}");
    let flows = client_flows(&r);
    let roles: Vec<&str> = flows.iter().map(|f| f.1.as_str()).collect();
    assert_eq!(roles, ["sender", "receiver"], "{flows:?}");
    let rec = r["runs"][0]["iperf3"]["reconciliation"].as_array().unwrap();
    assert_eq!(rec.len(), 2, "{rec:?}");
    let (sent, received) = (flows[0].2, flows[1].2);
    // The server's own output: what it received (flow 0) and sent (flow 1).
    let end = &srv["end"];
    let srv_received = end["sum_received"]["bytes"].as_u64().unwrap();
    let srv_sent = end["sum_sent_bidir_reverse"]["bytes"]
        .as_u64()
        .or_else(|| end["sum_sent"]["bytes"].as_u64())
        .unwrap();
    assert_eq!(rec[0]["iperf3_bytes"].as_u64(), Some(srv_received), "{end}");
    assert!(
        srv_received <= sent && sent - srv_received <= rmem_max,
        "{sent} vs {end}"
    );
    assert_eq!(
        received,
        rec[1]["iperf3_bytes"].as_u64().unwrap(),
        "{rec:?}"
    );
    // The server closes after its last write: everything it sent arrives.
    assert_eq!(received, srv_sent, "{end}");
    assert!(received > 1_000_000 && sent > 1_000_000, "{flows:?}");
    assert!(
        rx_b >= srv_received,
        "B's veth {rx_b} B < {srv_received} B received"
    );
    assert!(
        rx_a >= received,
        "A's veth {rx_a} B < {received} B received"
    );
    // The summary's server end is the server's own count: no byte "unaccounted" beyond
    // what it left unread, none read that was not sent.
    let dirs = r["runs"][0]["summary"]["workload"]["stream"]["directions"]
        .as_array()
        .unwrap();
    let by_dir = |d: &str| dirs.iter().find(|x| x["dir"] == d).unwrap();
    let fwd = by_dir("client_to_server");
    assert_eq!(fwd["iperf3_end"], "receiver", "{fwd}");
    assert_eq!(
        fwd["receiver_total_bytes"].as_u64(),
        Some(srv_received),
        "{fwd}"
    );
    assert_eq!(
        fwd["unaccounted_bytes"].as_i64(),
        Some((sent - srv_received) as i64)
    );
    let rev = by_dir("server_to_client");
    assert_eq!(rev["iperf3_end"], "sender", "{rev}");
    assert_eq!(rev["sender_total_bytes"].as_u64(), Some(srv_sent), "{rev}");
    assert_eq!(rev["unaccounted_bytes"].as_i64(), Some(0), "{rev}");

    // -n: a byte count, not a time, ends the test.
    let (r, srv) = run(5322, &["-n", "30M", "-t", "10"]);
    let flows = client_flows(&r);
    assert_eq!(flows.len(), 1);
    assert_eq!(flows[0].2, 30 << 20, "sent exactly -n bytes: {flows:?}");
    let srv_received = srv["end"]["sum_received"]["bytes"].as_u64().unwrap();
    assert!(
        srv_received <= 30 << 20 && (30 << 20) - srv_received <= rmem_max,
        "{}",
        srv["end"]
    );

    // --warmup 1: iperf3's -O 1.
    let ((r, srv), rx, packets) = rx_during(&tb, Side::B, || {
        run(5323, &["--warmup", "1", "-t", "1", "-b", "200M"])
    });
    assert_eq!(
        srv["start"]["test_start"]["omit"].as_u64(),
        Some(1),
        "{}",
        srv["start"]
    );
    let omitted = srv["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["sum"]["omitted"] == true)
        .count();
    assert!(omitted >= 1, "no omitted interval: {}", srv["intervals"]);
    // This end's count inside its window (its total covers the warm-up too).
    let ours = r["runs"][0]["client"]["data"]["stream"]["flows"][0]["window_bytes"]
        .as_u64()
        .unwrap();
    let payload = rx.saturating_sub(packets * MAX_HEADERS + CONTROL_SLACK);
    let share = ours as f64 / payload as f64;
    assert!(
        (0.3..=0.7).contains(&share),
        "this end counted {ours} B of {payload} B of payload over warm-up and test ({share:.2})"
    );
    let theirs = srv["end"]["sum_received"]["bytes"].as_u64().unwrap();
    // The summary: the server's window count, and no whole-test total for its end (it
    // starts counting after the omitted second).
    let d = &r["runs"][0]["summary"]["workload"]["stream"]["directions"][0];
    assert_eq!(d["receiver_bytes"].as_u64(), Some(theirs), "{d}");
    assert!(
        d["receiver_total_bytes"].is_null() && d["unaccounted_bytes"].is_null(),
        "{d}"
    );
    let ratio = ours as f64 / theirs as f64;
    assert!(
        (0.8..=1.2).contains(&ratio),
        "after the omitted second: wirebench {ours} B, iperf3 {theirs} B"
    );
}

/// SIGINT mid-test against a stock `iperf3 -s`: exit code 130, an "interrupted" result
/// with the bytes sent so far, the server told (it logs that the client terminated, and
/// counted no more than was sent), and the server free at once for the next test (no
/// `--retry`: a server left "busy" would refuse it).
#[test]
fn an_interrupted_iperf3_test_frees_the_server() {
    if !have_iperf3() {
        return;
    }
    require_netns();
    let _g = shared();
    let tb = Testbed::pair(1500).expect("testbed");
    let port = 5324u16;
    let log = std::env::temp_dir().join(format!("wb-iperf3-int-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let mut server = iperf3_server(
        &tb,
        port,
        &["--forceflush", "--logfile", log.to_str().unwrap()],
    );
    let p = port.to_string();
    let mut c = tb.command(Side::A, BIN);
    c.args([
        "stream", "--iperf3", "-H", ADDR_B, "-p", &p, "-J", "-t", "30", "-b", "200M",
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let child = Guarded::spawn(&mut c);
    assert!(
        wait_engine(child.id(), Duration::from_secs(10)),
        "the client did not start its engine"
    );
    std::thread::sleep(Duration::from_millis(500));
    kill(child.id(), "-INT");
    let o = child.wait_with_output();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["status"], "interrupted", "{r}");
    let sent = client_flows(&r)[0].2;
    assert!(sent > 0, "the bytes sent before the signal: {r}");
    let next = finish({
        let mut c = tb.command(Side::A, BIN);
        c.args([
            "stream", "--iperf3", "-H", ADDR_B, "-p", &p, "-q", "-t", "0.5",
        ]);
        c
    });
    assert_eq!(
        next.code, 0,
        "the next test: {}\n{}",
        next.stdout, next.stderr
    );
    let _ = server.child().kill();
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    assert!(
        text.contains("the client has terminated"),
        "the server's log:\n{text}"
    );
}
