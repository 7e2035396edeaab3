//! Figures a new user found wrong, each checked against an independent observer: the
//! congestion control the request/response sockets really run (`ss -tin`), a test
//! interrupted during its warm-up (no figures at all), and a `-w` above the kernel's
//! maximum (the sysctls and the effective buffer sizes).

use crate::common;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use wirebench_model::result::{RunResult, RunStatus};
use wirebench_model::warning::Warning;

/// The congestion-control names `ss -tin` shows on the established TCP connections to or
/// from `port` on this host (both ends of each connection), polled until some appear (or,
/// with `want`, until that name is among them: crr's connections live one transaction each).
fn ss_congestion(port: u16, within: Duration, want: Option<&str>) -> Vec<String> {
    let until = Instant::now() + within;
    let mut all: Vec<String> = Vec::new();
    loop {
        let out = Command::new("ss")
            .args(["-tin", "state", "established"])
            .arg(format!("( sport = :{port} or dport = :{port} )"))
            .output()
            .expect("ss (iproute2)");
        let text = String::from_utf8_lossy(&out.stdout);
        // The info line of each socket starts with its algorithm name.
        let names: Vec<String> = text
            .lines()
            .filter(|l| l.starts_with(' ') || l.starts_with('\t'))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .map(str::to_string)
            .collect();
        all.extend(names.iter().cloned());
        let done = match want {
            Some(w) => all.iter().any(|n| n == w),
            None => names.len() >= 2,
        };
        if done || Instant::now() >= until {
            return if want.is_some() { all } else { names };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// rr against a separate daemon, with `extra` flags, while `ss` watches its data
/// connection: what the kernel says the sockets run, and wirebench's result.
fn rr_watched(workload: &str, extra: &[&str], want: Option<&str>) -> (Vec<String>, RunResult) {
    let d = common::daemon::LocalDaemon::start(&[]);
    let port = d.addr.port().to_string();
    let mut c = Command::new(BIN);
    c.args([
        workload,
        "-H",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "3",
        "--json",
    ])
    .args(extra)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let child = Guarded::spawn(&mut c);
    assert!(wait_engine(child.id(), Duration::from_secs(10)));
    // The control connection runs the host default too; for rr the data connection is the
    // second established connection pair to the daemon's port. All of them are ours.
    let seen = ss_congestion(d.addr.port(), Duration::from_secs(5), want);
    let out = child.wait_with_output();
    let r = RunResult::from_json(&String::from_utf8_lossy(&out.stdout)).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    (seen, r)
}

fn host_default_cc() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .unwrap()
        .trim()
        .to_string()
}

/// `rr -C reno`: both ends' data sockets run reno (ss says so), the result says reno and
/// nothing else, with no mismatch warning. Without `-C`: the result names what ss shows (the
/// host default), whatever that default is.
#[test]
fn rr_reports_the_congestion_control_its_sockets_run() {
    // Shared: names only (ss filtered to this test's daemon port; no test changes the host's
    // default algorithm, the labs set theirs inside their namespaces).
    let _g = shared();
    // Open loop at 2,000 transactions/s: a closed loop would keep both CPUs busy for the
    // 3 s the names are watched (2.6 s of CPU per run against 0.3 s).
    let (seen, r) = rr_watched("rr", &["-C", "reno", "-b", "2000"], None);
    assert!(seen.iter().any(|n| n == "reno"), "ss: {seen:?}");
    assert_eq!(r.status, RunStatus::Completed);
    let s = r.runs[0].summary.as_ref().unwrap();
    assert_eq!(s.congestion, vec!["reno".to_string()], "{:?}", s.warnings);
    assert!(!s
        .warnings
        .iter()
        .any(|w| matches!(w.warning, Warning::CongestionMismatch { .. })));
    // Both ends reported their sockets' algorithm.
    for side in [&r.runs[0].client, &r.runs[0].server] {
        let rr = side.as_ref().unwrap().rr().unwrap();
        assert!(rr
            .flows
            .iter()
            .all(|f| f.congestion.as_deref() == Some("reno")));
    }

    let default = host_default_cc();
    let (seen, r) = rr_watched("rr", &["-b", "2000"], None);
    // The control and the data connection, both ends: four sockets; ss must have seen them.
    assert!(seen.len() >= 2, "ss saw {seen:?}");
    assert!(seen.iter().all(|n| *n == default), "ss: {seen:?}");
    let s = r.runs[0].summary.as_ref().unwrap();
    assert_eq!(s.congestion, vec![default]);
}

/// crr: every transaction's connection runs the algorithm asked for (the last socket of each
/// flow is what the result reports), and ss, polling while connections come and go, sees
/// reno on them (the control connection keeps the host default, so that is all ss can tell
/// apart: a name other than reno or the default would be a data connection on the wrong one).
#[test]
fn crr_reports_the_congestion_control_its_sockets_run() {
    // Shared: names only, as above.
    let _g = shared();
    let (seen, r) = rr_watched("crr", &["-C", "reno"], Some("reno"));
    assert!(seen.iter().any(|n| n == "reno"), "ss: {seen:?}");
    let default = host_default_cc();
    assert!(
        seen.iter().all(|n| n == "reno" || *n == default),
        "ss: {seen:?}"
    );
    let s = r.runs[0].summary.as_ref().unwrap();
    assert_eq!(s.congestion, vec!["reno".to_string()], "{:?}", s.warnings);
}

/// SIGINT during the warm-up: the window never opened, so there are no figures — status
/// interrupted, no summary, a warning, exit 130 — and the human output says so.
#[test]
fn interrupted_during_warm_up_has_no_figures() {
    let _g = serial();
    for json in [true, false] {
        let mut c = Command::new(BIN);
        c.args(["stream", "-t", "5", "--warmup", "4", "-i", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if json {
            c.arg("--json");
        }
        let child = Guarded::spawn(&mut c);
        assert!(wait_engine(child.id(), Duration::from_secs(10)));
        kill(child.id(), "-INT");
        let out = child.wait_with_output();
        assert_eq!(out.status.code(), Some(130));
        let text = String::from_utf8_lossy(&out.stdout);
        if json {
            let r = RunResult::from_json(&text).unwrap();
            assert_eq!(r.status, RunStatus::Interrupted);
            let run = &r.runs[0];
            assert!(run.summary.is_none(), "{:?}", run.summary);
            assert!(run.client.as_ref().unwrap().window.is_none());
            assert!(r
                .warnings
                .iter()
                .any(|w| matches!(w.warning, Warning::EndedBeforeWindow { run: 1 })));
            // The raw counts are still there: bytes did move in the warm-up, and none of
            // them counts as measured.
            let flows = &run.client.as_ref().unwrap().stream().unwrap().flows;
            assert!(flows[0].total_bytes > 0);
            assert_eq!(flows[0].window_bytes, 0);
        } else {
            assert!(text.contains("interrupted during warm-up"), "{text}");
            assert!(!text.contains("Gbit/s"), "{text}");
        }
    }
}

fn sysctl_u64(name: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/sys/{}", name.replace('.', "/")))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// `-w` above net.core.rmem_max/wmem_max: the kernel capped the buffers (getsockopt shows at
/// most twice the maximum) and the result says so at each end, with both sysctls.
#[test]
fn a_window_above_the_kernel_maximum_is_reported() {
    let _g = serial();
    let (rmem, wmem) = (
        sysctl_u64("net.core.rmem_max"),
        sysctl_u64("net.core.wmem_max"),
    );
    let ask = rmem.max(wmem) * 4;
    let r = wb(&["stream", "-t", "0.5", "-w", &ask.to_string(), "--json"]).json();
    let s = r.runs[0].summary.as_ref().unwrap();
    for host in [
        wirebench_model::side::HostRole::Client,
        wirebench_model::side::HostRole::Server,
    ] {
        assert!(
            s.warnings.iter().any(|w| w.warning
                == Warning::WindowCapped {
                    host,
                    requested_bytes: ask,
                    rmem_max_bytes: Some(rmem),
                    wmem_max_bytes: Some(wmem),
                }),
            "{:?}",
            s.warnings
        );
    }
    let f = &s.stream().unwrap().flows[0];
    // The kernel doubles what it grants (bookkeeping overhead): at most 2 × the maximum.
    assert!(u64::from(f.rcvbuf_bytes.unwrap()) <= 2 * rmem, "{f:?}");
    assert!(u64::from(f.sndbuf_bytes.unwrap()) <= 2 * wmem, "{f:?}");
}

/// `50Mbps`, `5.8Gbps`, `800Kbps`, `12bps` as bits per second.
fn parse_bps(v: &str) -> Option<f64> {
    let n = v.strip_suffix("bps")?;
    let (num, mult) = match n.chars().last()? {
        'G' => (&n[..n.len() - 1], 1e9),
        'M' => (&n[..n.len() - 1], 1e6),
        'K' => (&n[..n.len() - 1], 1e3),
        _ => (n, 1.0),
    };
    num.parse::<f64>().ok().map(|x| x * mult)
}

/// What `ss -tin` shows on the established connections to `port`: the pacing rate of each
/// socket with a cap (bit/s) and every socket's MSS.
/// Per established socket to or from `port`: its pacing cap (`RATE/CAP` in ss: the data
/// sockets, which set SO_MAX_PACING_RATE) and its MSS.
fn ss_pacing_and_mss(port: u16) -> Vec<(Option<f64>, Option<u32>)> {
    let out = Command::new("ss")
        .args(["-tin", "state", "established"])
        .arg(format!("( sport = :{port} or dport = :{port} )"))
        .output()
        .expect("ss (iproute2)");
    let text = String::from_utf8_lossy(&out.stdout);
    // Each socket is an address line followed by an indented info line.
    text.lines()
        .filter(|l| l.starts_with(' ') || l.starts_with('\t'))
        .map(|info| {
            let words: Vec<&str> = info.split_whitespace().collect();
            let mut cap = None;
            let mut mss = None;
            for (i, w) in words.iter().enumerate() {
                if *w == "pacing_rate" {
                    // `RATE` or, with SO_MAX_PACING_RATE set, `RATE/CAP`: the socket paces at
                    // the smaller of the two.
                    if let Some(v) = words.get(i + 1).filter(|v| v.contains('/')) {
                        cap = v.split('/').filter_map(parse_bps).reduce(f64::min);
                    }
                }
                if let Some(m) = w.strip_prefix("mss:").and_then(|m| m.parse().ok()) {
                    mss = Some(m);
                }
            }
            (cap, mss)
        })
        .collect()
}

/// `--fq-rate`, `-M`, `-S` and `--dont-fragment` reach the kernel at both ends: ss shows
/// every data socket paced at most at the cap and its MSS at most the one asked for; a packet
/// capture on the receiving host sees the data segments carry the TOS byte and DF.
#[test]
fn socket_options_reach_the_kernel() {
    use wirebench_lab::{Side, Testbed, ADDR_B, IF_B};
    require_netns();
    // Shared: socket options as ss and a capture see them, in a testbed of its own; a
    // capture that misses segments under load only lowers both counts. Timed: the capture
    // runs for 4 s and ss is polled for at most 10 s.
    let _g = shared_timed();
    let tb = Testbed::pair(1500).unwrap();
    let mut c = tb.command(Side::B, BIN);
    c.args(["serve", "--bind", ADDR_B, "--allow-unauthenticated"]);
    let d = common::daemon::LocalDaemon::start_cmd(c, &["--port", "0"]);
    let port = d.addr.port();
    // Capture on B while the test runs: IPv4 TOS and DF of the TCP segments to the port.
    let cap = tb.spawn_in(Side::B, move || {
        use wirebench_sys::packet::{ifindex, PacketSocket};
        let sock = PacketSocket::open(ifindex(IF_B).unwrap()).unwrap();
        let (mut marked, mut unmarked) = (0u64, 0u64);
        let mut buf = vec![0u8; 2048];
        let end = Instant::now() + Duration::from_secs(4);
        while Instant::now() < end {
            let Ok(Some(meta)) = sock.recv_timeout(&mut buf, Duration::from_millis(50)) else {
                continue;
            };
            if meta.outgoing() || meta.len < 14 + 20 + 20 + 100 {
                continue;
            }
            let ip = &buf[14..];
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            let dport = u16::from_be_bytes([ip[ihl + 2], ip[ihl + 3]]);
            if ip[9] != 6 || dport != port {
                continue;
            }
            // Payload-carrying segments only (the control connection's are small).
            let df = ip[6] & 0x40 != 0;
            if ip[1] == 0x10 && df {
                marked += 1;
            } else {
                unmarked += 1;
            }
        }
        (marked, unmarked)
    });
    let mut cmd = tb.command(Side::A, BIN);
    cmd.args([
        "stream",
        "-H",
        ADDR_B,
        "-p",
        &port.to_string(),
        "-t",
        "2",
        "--json",
    ])
    .args([
        "--fq-rate",
        "50M",
        "-M",
        "1000",
        "-S",
        "0x10",
        "--dont-fragment",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let child = Guarded::spawn(&mut cmd);
    assert!(wait_engine(child.id(), Duration::from_secs(10)));
    // Polled until the data socket (the one with a pacing cap) is in ss's list.
    let t = Instant::now();
    let sockets = loop {
        let sockets = tb.run_in(Side::A, move || ss_pacing_and_mss(port)).unwrap();
        if sockets.iter().any(|s| s.0.is_some()) || t.elapsed() > Duration::from_secs(10) {
            break sockets;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output();
    let r = RunResult::from_json(&String::from_utf8_lossy(&out.stdout)).unwrap();
    let (marked, unmarked) = cap.join().unwrap().unwrap();
    eprintln!("ss (cap, mss) {sockets:?}; segments TOS 0x10+DF {marked}, other {unmarked}");
    assert_eq!(r.status, RunStatus::Completed);
    // The data sockets are the ones with a pacing cap: one flow, ss on the client's host
    // sees its end (both ends when the namespace holds both). Every one paces at most at
    // 50 Mbit/s and has an MSS of at most 1000 (the control connection keeps the path's).
    let data: Vec<_> = sockets.iter().filter(|s| s.0.is_some()).collect();
    assert!(!data.is_empty(), "no data socket in ss: {sockets:?}");
    assert!(
        data.iter().all(|s| s.0.is_some_and(|p| p <= 50e6 * 1.01)),
        "{sockets:?}"
    );
    assert!(
        data.iter().all(|s| s.1.is_some_and(|m| m <= 1000)),
        "{sockets:?}"
    );
    assert!(marked > 100, "{marked} marked segments, {unmarked} not");
    let got = r.runs[0]
        .summary
        .as_ref()
        .unwrap()
        .stream()
        .unwrap()
        .directions[0]
        .receiver_throughput_bps;
    // Paced by the kernel at 50 Mbit/s (wire) : payload at most the cap.
    assert!(got <= 50e6 * 1.05 && got > 10e6, "{got}");
}

/// `-B` and `--cport`: the server sees the data connections come from that address and
/// those ports (its own getpeername on the accepted sockets).
#[test]
fn bind_and_client_port_are_what_the_server_sees() {
    let _g = serial();
    let d = common::daemon::LocalDaemon::start(&["--max-tests-per-peer", "2"]);
    let port = d.addr.port().to_string();
    let r = wb(&[
        "stream",
        "-H",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "0.5",
        "-P",
        "2",
        "-B",
        "127.0.0.2",
        "--cport",
        "40123",
        "--json",
    ])
    .json();
    assert_eq!(r.status, RunStatus::Completed);
    let server = r.runs[0].server.as_ref().unwrap().stream().unwrap();
    let mut peers: Vec<String> = server
        .flows
        .iter()
        .map(|f| f.socket.peer.clone().unwrap())
        .collect();
    peers.sort();
    assert_eq!(peers, vec!["127.0.0.2:40123", "127.0.0.2:40124"]);
}

/// `serve -1 --pidfile`: the pid file holds the daemon's PID while it runs; after one test
/// the daemon exits 0 by itself and removes the pid file.
#[test]
fn serve_one_off_with_a_pidfile() {
    let _g = serial();
    let dir = std::env::temp_dir().join(format!("wb-pid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("wb.pid");
    let mut d = common::daemon::LocalDaemon::start(&["-1", "--pidfile", pidfile.to_str().unwrap()]);
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(pid, d.pid());
    let port = d.addr.port().to_string();
    let r = wb(&[
        "stream",
        "-H",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "0.3",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(d.wait_exit(Duration::from_secs(10)), Some(0));
    assert!(!pidfile.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two ends in different network namespaces of one kernel are one machine for CPU purposes:
/// the same boot id at both ends (read by each end from its own /proc) makes the result warn
/// that their system-wide CPU figures count the same CPUs, as on loopback.
#[test]
fn namespaces_of_one_kernel_are_one_machine() {
    use wirebench_lab::{Side, Testbed, ADDR_B};
    require_netns();
    let _g = serial();
    let tb = Testbed::pair(1500).unwrap();
    let mut c = tb.command(Side::B, BIN);
    c.args(["serve", "--bind", ADDR_B, "--allow-unauthenticated"]);
    let d = common::daemon::LocalDaemon::start_cmd(c, &["--port", "0"]);
    let port = d.addr.port().to_string();
    let r = wb_in(
        &tb,
        Side::A,
        &["stream", "-H", ADDR_B, "-p", &port, "-t", "0.5", "--json"],
    )
    .json();
    let run = &r.runs[0];
    let boot = |s: &Option<wirebench_model::side::SideReport>| {
        s.as_ref().unwrap().env.boot_id.clone().expect("boot id")
    };
    let here = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    assert_eq!(boot(&run.client), here.trim());
    assert_eq!(boot(&run.server), here.trim());
    let s = run.summary.as_ref().unwrap();
    assert!(s.same_host);
    assert!(s.warnings.iter().any(|w| w.warning == Warning::SameHost));
}

/// The largest unsent queue (`notsent:` in `ss -tin`, bytes) over the established TCP
/// sockets `filter` selects, and how many sockets it saw, over `samples` looks 200 ms apart.
fn ss_max_notsent(filter: &str, samples: u32) -> (usize, u64) {
    let (mut sockets, mut max) = (0, 0);
    for i in 0..samples {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(200));
        }
        let out = Command::new("ss")
            .args(["-tin", "state", "established", filter])
            .output()
            .expect("ss (iproute2)");
        let text = String::from_utf8_lossy(&out.stdout);
        // One unindented line per socket (after the header), then its indented info line;
        // `ss` leaves `notsent:` out when nothing is unsent.
        let seen = text
            .lines()
            .skip(1)
            .filter(|l| !l.starts_with(' ') && !l.starts_with('\t') && !l.is_empty())
            .count();
        sockets = sockets.max(seen);
        for w in text.split_whitespace() {
            if let Some(n) = w.strip_prefix("notsent:").and_then(|n| n.parse().ok()) {
                max = max.max(n);
            }
        }
    }
    (sockets, max)
}

/// `--notsent-lowat 16K` reaches the kernel at the sending end: with the senders held to
/// 20 Mbit/s each by a pacing cap (so the window never drains their queues), `ss` sees no
/// sending socket with more unsent data than the limit plus one 128 KiB write (the kernel
/// lets a write start below the limit), where without the flag their queues fill their
/// autotuned buffers. Checked on the thread-per-flow engine at the client (forward, one
/// flow) and on the epoll engine at the server (reverse, 40 flows); each sending flow's
/// report reads the limit back.
#[test]
fn notsent_lowat_holds_unsent_data_in_the_sender() {
    const LOWAT: u64 = 16 << 10;
    const CALL: u64 = 128 << 10;
    // Shared: the bounds are the kernel's (a write starts below the limit; a paced sender's
    // queue fills), not rates; ss is filtered to this test's daemon port.
    let _g = shared();
    let d = common::daemon::LocalDaemon::start(&[]);
    let port = d.addr.port();
    let run = |flows: &str, reverse: bool, lowat: bool| {
        let mut c = Command::new(BIN);
        c.args(["stream", "-H", "127.0.0.1", "-p", &port.to_string()])
            .args(["-t", "3", "-P", flows, "-l", "128K", "-C", "cubic"])
            .args(["--fq-rate", "20M", "-i", "0.5", "--json-stream"])
            .stderr(Stdio::null());
        if reverse {
            c.arg("-R");
        }
        if lowat {
            c.args(["--notsent-lowat", "16K"]);
        }
        let child = common::streamed::Streamed::spawn(&mut c);
        // The queues have had a second to fill once two 0.5 s intervals are out.
        assert!(
            child.wait_intervals("client", 2, Duration::from_secs(20)),
            "no 2 client intervals within 20 s"
        );
        // The senders' sockets: the client's (to the port) forward, the server's reverse.
        let filter = if reverse {
            format!("( sport = :{port} )")
        } else {
            format!("( dport = :{port} )")
        };
        let seen = ss_max_notsent(&filter, 4);
        let r = child.wait().result();
        assert_eq!(r.status, RunStatus::Completed, "{r:?}");
        (seen, r)
    };
    for (flows, reverse) in [("1", false), ("40", true)] {
        let ((sockets, max), r) = run(flows, reverse, true);
        eprintln!(
            "-P {flows} reverse {reverse} --notsent-lowat 16K: {sockets} sockets, max unsent {max}"
        );
        assert!(sockets > flows.parse().unwrap(), "{sockets} sockets seen");
        assert!(
            max <= LOWAT + CALL,
            "unsent {max} bytes above {LOWAT} + one {CALL}-byte write"
        );
        let s = r.runs[0].summary.as_ref().unwrap().stream().unwrap();
        assert_eq!(s.flows.len(), flows.parse::<usize>().unwrap());
        assert!(
            s.flows
                .iter()
                .all(|f| f.notsent_lowat_bytes == Some(LOWAT as u32)),
            "{:?}",
            s.flows
                .iter()
                .map(|f| f.notsent_lowat_bytes)
                .collect::<Vec<_>>()
        );
    }
    // Without the flag the same senders queue far more: the bound above can fail.
    let ((sockets, max), r) = run("40", true, false);
    eprintln!("-P 40 reverse, no --notsent-lowat: {sockets} sockets, max unsent {max}");
    assert!(max > 2 * (LOWAT + CALL), "unsent {max} bytes");
    let s = r.runs[0].summary.as_ref().unwrap().stream().unwrap();
    assert!(s.flows.iter().all(|f| f.notsent_lowat_bytes.is_none()));
}

/// `rr --under-load 1 -H` against a daemon with its default limits (one test per peer): the
/// load and the measured test are admitted as one group and run at once. Ground truth: the
/// daemon's own test records, where the load (a stream test) and the loaded request/response
/// test overlap in time. With `--max-flows 1` the group's two flows exceed the server's
/// bound, so the loaded test is refused (busy) instead.
#[test]
fn under_load_runs_against_a_daemon_with_default_limits() {
    // Shared: admission and overlap in the daemon's records, no figure.
    let _g = shared();
    let d = common::daemon::LocalDaemon::start(&[]);
    let port = d.addr.port().to_string();
    let args = [
        "rr",
        "-H",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "0.5",
        "--under-load",
        "1",
        // Paced: the overlap is checked, not the load's rate (unpaced, it kept both CPUs busy
        // beside the other shared tests).
        "--load-rate",
        "200M",
        "--json",
    ];
    let r = wb(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = r.json();
    assert_eq!(r.status, RunStatus::Completed, "{:?}", r.error);
    assert!(r.under_load.is_some());
    let records = d.wait_records(3, Duration::from_secs(10));
    let span = |workload: &str| {
        records
            .iter()
            .filter(|t| t["spec"]["workload"].get(workload).is_some())
            .filter(|t| t["spec"]["common"]["admission_group"].is_u64())
            .map(|t| {
                (
                    t["admitted_unix_ms"].as_u64().unwrap(),
                    t["ended_unix_ms"].as_u64().unwrap(),
                )
            })
            .next()
            .unwrap_or_else(|| panic!("no grouped {workload} record: {records:?}"))
    };
    let (load, rr) = (span("stream"), span("rr"));
    assert!(
        load.0 < rr.1 && rr.0 < load.1,
        "the load {load:?} and the test {rr:?} did not overlap"
    );

    let d = common::daemon::LocalDaemon::start(&["--max-flows", "1"]);
    let port = d.addr.port().to_string();
    let mut a = args;
    a[4] = &port;
    let r = wb(&a);
    assert_ne!(r.code, 0, "two flows in a group past --max-flows 1 ran");
    let r = r.json();
    let e = r.error.as_ref().expect("an error");
    assert_eq!(e.kind, wirebench_model::error::ErrorKind::Busy, "{e:?}");
}
