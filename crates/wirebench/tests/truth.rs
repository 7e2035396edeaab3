//! Figures a new user found wrong, each checked against an independent observer: the
//! congestion control the request/response sockets really run (`ss -tin`), a test
//! interrupted during its warm-up (no figures at all), and a `-w` above the kernel's
//! maximum (the sysctls and the effective buffer sizes).

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use wirebench_model::result::{RunResult, RunStatus};
use wirebench_model::warning::Warning;

/// The congestion-control names `ss -tin` shows on the established TCP connections to or
/// from `port` on this host (both ends of each connection), polled until some appear.
fn ss_congestion(port: u16, within: Duration) -> Vec<String> {
    let until = Instant::now() + within;
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
        if names.len() >= 2 || Instant::now() >= until {
            return names;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// rr against a separate daemon, with `extra` flags, while `ss` watches its data
/// connection: what the kernel says the sockets run, and wirebench's result.
fn rr_watched(workload: &str, extra: &[&str]) -> (Vec<String>, RunResult) {
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
    let seen = ss_congestion(d.addr.port(), Duration::from_secs(5));
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
    let _g = serial();
    let (seen, r) = rr_watched("rr", &["-C", "reno"]);
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
    let (seen, r) = rr_watched("rr", &[]);
    assert!(seen.iter().all(|n| *n == default), "ss: {seen:?}");
    let s = r.runs[0].summary.as_ref().unwrap();
    assert_eq!(s.congestion, vec![default]);
}

/// crr: every transaction's connection runs the algorithm asked for (the last socket of each
/// flow is what the result reports).
#[test]
fn crr_reports_the_congestion_control_its_sockets_run() {
    let _g = serial();
    let (_, r) = rr_watched("crr", &["-C", "reno"]);
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
