//! `wirebench rr --busy-poll` end to end, checked against the kernel's own accounting of the
//! data threads: a thread that sleeps in a blocking read is switched out voluntarily
//! (`voluntary_ctxt_switches` in /proc/PID/task/TID/status), one that spins on a
//! non-blocking socket and yields is not (a yield with another task runnable counts as an
//! involuntary switch). Without busy polling, a round trip between two CPUs costs each end
//! a sleep; with it, almost none. SO_BUSY_POLL is what the kernel reads back on the sockets.

use std::collections::HashMap;
use std::fs;
use std::io::Read;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::common::*;
use wirebench_model::result::{RunResult, RunStatus};
use wirebench_model::side::HostRole;

/// Voluntary context switches of every request/response data thread (`wb-rr-*`, both ends:
/// the client and its embedded server share the process), by thread id.
fn rr_thread_switches(pid: u32) -> HashMap<u32, u64> {
    let mut out = HashMap::new();
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let dir = t.path();
        let comm = fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if !comm.starts_with("wb-rr-") {
            continue;
        }
        let status = fs::read_to_string(dir.join("status")).unwrap_or_default();
        let vol = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse::<u64>().ok());
        let tid = t.file_name().to_string_lossy().parse::<u32>().ok();
        if let (Some(tid), Some(vol)) = (tid, vol) {
            out.insert(tid, vol);
        }
    }
    out
}

/// Run `wirebench rr ARGS --json` for 2 s with client and server on different CPUs; while it
/// runs, count the data threads' voluntary switches over about 0.6 s. Returns the result,
/// the switches and the span they were counted over.
fn run_counting(extra: &[&str]) -> (RunResult, u64, Duration) {
    let mut c = Command::new(BIN);
    c.args(["rr", "-t", "2", "-A", "0,1", "--json"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn wirebench");
    let pid = child.id();
    // Both ends' data threads (one flow: one thread per end).
    let deadline = Instant::now() + Duration::from_secs(20);
    while rr_thread_switches(pid).len() < 2 {
        assert!(Instant::now() < deadline, "no rr data threads appeared");
        thread::sleep(Duration::from_millis(5));
    }
    thread::sleep(Duration::from_millis(300));
    let (t0, before) = (Instant::now(), rr_thread_switches(pid));
    thread::sleep(Duration::from_millis(600));
    let (t1, after) = (Instant::now(), rr_thread_switches(pid));
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{stderr}");
    assert_eq!(before.len(), 2, "{before:?}");
    let switches: u64 = before
        .iter()
        .map(|(tid, v)| after.get(tid).expect("thread lived through the span") - v)
        .sum();
    let r = RunResult::from_json(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(r.status, RunStatus::Completed, "{stderr}");
    (r, switches, t1 - t0)
}

fn check(udp: bool) {
    let _s = serial();
    let base: &[&str] = if udp { &["--udp"] } else { &[] };
    let (idle, idle_switches, idle_span) = run_counting(base);
    let busy_args: Vec<&str> = base.iter().copied().chain(["--busy-poll"]).collect();
    let (busy, busy_switches, busy_span) = run_counting(&busy_args);

    let rr = |r: &RunResult| r.runs[0].summary.as_ref().unwrap().rr().unwrap().clone();
    let (idle_rr, busy_rr) = (rr(&idle), rr(&busy));
    // Transactions over the counted span, at each run's measured rate.
    let idle_tx = idle_rr.transactions_per_s * idle_span.as_secs_f64();
    let busy_tx = busy_rr.transactions_per_s * busy_span.as_secs_f64();
    eprintln!(
        "udp={udp}: sleeping {idle_switches} voluntary switches for ~{idle_tx:.0} transactions \
         ({:.0}/s, p50 {} ns); busy-poll {busy_switches} for ~{busy_tx:.0} ({:.0}/s, p50 {} ns)",
        idle_rr.transactions_per_s,
        idle_rr.latency.unwrap().p50_ns,
        busy_rr.transactions_per_s,
        busy_rr.latency.unwrap().p50_ns,
    );
    assert!(
        idle_tx > 100.0 && busy_tx > 100.0,
        "too few transactions to judge"
    );
    // The control: blocking calls sleep about once per transaction at each end.
    assert!(
        idle_switches as f64 > 0.5 * idle_tx,
        "without busy polling the threads should sleep per transaction: {idle_switches} \
         switches for {idle_tx:.0} transactions"
    );
    // Busy polling: the threads never sleep waiting for data.
    assert!(
        (busy_switches as f64) < 0.02 * busy_tx,
        "busy-polled threads slept: {busy_switches} voluntary switches for {busy_tx:.0} \
         transactions"
    );

    // What the result says: no busy polling in the plain run; both ends spun on their one
    // flow with SO_BUSY_POLL 50 µs as the kernel read it back (root has CAP_NET_ADMIN).
    assert!(idle_rr.busy_poll.is_none());
    let b = busy_rr.busy_poll.expect("busy_poll summary");
    assert_eq!(b.requested_us, 50);
    let hosts: Vec<HostRole> = b.ends.iter().map(|e| e.host).collect();
    assert_eq!(hosts, [HostRole::Client, HostRole::Server]);
    for e in &b.ends {
        assert_eq!((e.flows_spinning, e.flows), (1, 1), "{e:?}");
        assert_eq!(e.so_busy_poll_us, Some(50), "{e:?}");
        assert!(e.so_busy_poll_error.is_none(), "{e:?}");
    }
    // Spinning changes no count: every transaction the client completed, the server
    // answered (UDP: no datagram went missing on loopback).
    let server = busy_rr.server_total.expect("server counts");
    assert_eq!(server.transactions, busy_rr.client_total.transactions);
    if udp {
        assert_eq!(busy_rr.client_total.lost, 0);
    }
    // The verdict does not take the spinning CPUs for the limit.
    let v = busy.runs[0]
        .summary
        .as_ref()
        .unwrap()
        .verdict
        .clone()
        .unwrap();
    assert!(
        !matches!(v.limiter, wirebench_model::verdict::Limiter::Cpu { .. }),
        "{v:?}"
    );
}

#[test]
fn tcp_rr_busy_poll_spins_instead_of_sleeping() {
    check(false);
}

#[test]
fn udp_rr_busy_poll_spins_instead_of_sleeping() {
    check(true);
}

#[test]
fn busy_poll_bad_input_is_refused_with_the_flag() {
    let _shared = crate::common::shared();
    let r = wb(&["rr", "-t", "1", "--busy-poll", "5000"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--busy-poll"), "{}", r.stderr);
    let r = wb(&["rr", "-t", "1", "--busy-poll", "often"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("often"), "{}", r.stderr);
    // CRR opens a connection per transaction: no busy polling there.
    let r = wb(&["crr", "-t", "1", "--busy-poll"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    // `off` is the plain test.
    let r = wb(&["rr", "-t", "0.2", "--busy-poll", "off", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = r.json().runs[0].summary.clone().unwrap();
    assert!(s.rr().unwrap().busy_poll.is_none());
}
