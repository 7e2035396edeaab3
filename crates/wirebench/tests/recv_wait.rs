//! `wirebench stream --recv-wait` end to end, checked against the kernel: a napping receiver
//! sleeps on its own timer, so the kernel counts each nap as a voluntary context switch of
//! the receiving thread (`voluntary_ctxt_switches` in /proc/PID/task/TID/status of a
//! separate `wirebench serve` process, whose only data thread is the receiver); `auto`, the
//! default, naps only with calls of at most 512 KiB and a socket receive buffer, as the
//! kernel reports it at close, of at least 1.5 MiB. On the epoll engine a worker naps the
//! same way before `epoll_wait`; there `perf stat` counts its sleep calls.

use std::fs;
use std::thread;
use std::time::{Duration, Instant};

use crate::common::daemon::LocalDaemon;
use crate::common::*;
use wirebench_model::abort::EngineKind;
use wirebench_model::result::{DirectionSummary, FlowSummary, RunResult};
use wirebench_model::side::RecvWaitStats;
use wirebench_model::spec::{RecvWait, NAPS_BEFORE_BLOCK, NAP_MIN_RCVBUF_BYTES, NAP_US};

/// Voluntary context switches of the stream data threads (`wb-flow-*`) of `pid`, summed.
fn flow_thread_switches(pid: u32) -> Option<u64> {
    let mut sum = None;
    for t in fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        let dir = t.path();
        let comm = fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if !comm.starts_with("wb-flow-") {
            continue;
        }
        let status = fs::read_to_string(dir.join("status")).unwrap_or_default();
        let vol = status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse::<u64>().ok())?;
        sum = Some(sum.unwrap_or(0) + vol);
    }
    sum
}

fn direction(r: &RunResult) -> (DirectionSummary, FlowSummary) {
    let s = r.runs[0].summary.as_ref().expect("summary");
    let st = s.stream().expect("stream summary");
    (st.directions[0].clone(), st.flows[0].clone())
}

fn stream_to(d: &LocalDaemon, extra: &[&str]) -> RunResult {
    let port = d.addr.port().to_string();
    let mut args = vec!["stream", "-H", "127.0.0.1", "-p", &port, "--json"];
    args.extend_from_slice(extra);
    let ran = wb(&args);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    ran.json()
}

/// Run `stream ARGS` against `d` for 2 s while watching the daemon's receiving thread (its
/// only data thread) every 5 ms: the result and the last count of the thread's voluntary
/// switches seen before it ended (the kernel counts from the thread's start, so this is
/// its whole life but for the last few milliseconds).
fn run_counting(d: &LocalDaemon, extra: &[&str]) -> (RunResult, u64) {
    let pid = d.pid();
    let watcher = thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut last = None;
        while Instant::now() < deadline {
            match (flow_thread_switches(pid), last) {
                (Some(v), _) => last = Some(v),
                (None, Some(_)) => break,
                (None, None) => {}
            }
            thread::sleep(Duration::from_millis(5));
        }
        last
    });
    let mut args = vec!["-t", "2"];
    args.extend_from_slice(extra);
    let r = stream_to(d, &args);
    let switches = watcher
        .join()
        .unwrap()
        .expect("the receiving thread was seen");
    (r, switches)
}

/// Paced at 100 Mbit/s in 16 KiB calls, a call arrives every ~1.3 ms, whatever the load:
/// between two, a napping receiver takes all its naps and then blocks; a blocking one
/// sleeps once.
const PACED: [&str; 4] = ["-l", "16K", "-b", "100M"];

#[test]
fn naps_are_the_receivers_own_sleeps_and_block_sleeps_once_per_wait() {
    let _s = serial();
    let d = LocalDaemon::start(&[]);
    let args: Vec<&str> = PACED
        .iter()
        .copied()
        .chain(["--recv-wait", "nap"])
        .collect();
    let (r, switches) = run_counting(&d, &args);
    let w: RecvWaitStats = direction(&r)
        .0
        .recv_wait
        .expect("the receiver reports its wait");
    assert_eq!(w.asked, RecvWait::Nap);
    // Each nap sleeps at least what it asked (a timer never fires early), follows a poll
    // that found the socket empty, and a wait takes at most NAPS_BEFORE_BLOCK of them.
    assert!(w.nap_ns >= w.naps * NAP_US * 1000, "{w:?}");
    assert!(w.empty_polls >= w.naps, "{w:?}");
    assert!(
        w.naps <= w.recv_calls * u64::from(NAPS_BEFORE_BLOCK),
        "{w:?}"
    );
    assert!(w.blocking_waits > 100, "{w:?}");
    // The kernel's count: every nap and every blocking wait the receiver reports is one
    // voluntary switch of its thread; outside them it sleeps only around the test (setup,
    // start, drain: a few). A receiver that blocked while reporting naps would show about
    // a fifth of the sleeps it claims. The watcher misses its last look (5 ms, more on a loaded machine).
    let claimed = (w.naps + w.blocking_waits) as f64;
    eprintln!("nap: {w:?}; {switches} voluntary switches, {claimed} sleeps claimed");
    assert!(
        (0.85 * claimed..=1.1 * claimed + 50.0).contains(&(switches as f64)),
        "the receiver reported {claimed} sleeps, the kernel saw {switches}"
    );

    let args: Vec<&str> = PACED
        .iter()
        .copied()
        .chain(["--recv-wait", "block"])
        .collect();
    let (r, switches) = run_counting(&d, &args);
    let w = direction(&r).0.recv_wait.expect("reported");
    assert_eq!(w.asked, RecvWait::Block);
    assert_eq!(
        (w.empty_polls, w.naps, w.nap_ns, w.blocking_waits),
        (0, 0, 0, 0)
    );
    // Blocking: at most one sleep per receive call (none when the pacer sent two calls'
    // worth at once), and no naps.
    let calls = w.recv_calls as f64;
    eprintln!("block: {w:?}; {switches} voluntary switches, {calls} receive calls");
    assert!(calls > 500.0, "{w:?}");
    assert!(
        switches as f64 <= 1.1 * calls + 50.0,
        "{calls} blocking receive calls, {switches} voluntary switches"
    );
}

#[test]
fn auto_naps_only_with_a_large_receive_buffer_and_calls_of_at_most_512k() {
    let _s = serial();
    let d = LocalDaemon::start(&[]);
    // Not asked, a receiver waits `auto`; at the default 1 MiB calls that is blocking in
    // every call, unchecked.
    let r = stream_to(&d, &["-t", "1"]);
    let w = direction(&r).0.recv_wait.expect("reported");
    assert_eq!(w.asked, RecvWait::Auto);
    assert_eq!(w.large_calls, w.recv_calls, "{w:?}");
    assert_eq!(
        (w.empty_polls, w.naps, w.small_buffer_calls),
        (0, 0, 0),
        "{w:?}"
    );
    // -w 64K: the kernel doubles SO_RCVBUF to 128 KiB and autotuning leaves it there.
    let r = stream_to(
        &d,
        &["-t", "1", "-l", "128K", "-w", "64K", "--recv-wait", "auto"],
    );
    let (dir, flow) = direction(&r);
    let w = dir.recv_wait.expect("reported");
    let rcvbuf = u64::from(flow.rcvbuf_bytes.expect("SO_RCVBUF read at close"));
    assert!(rcvbuf < NAP_MIN_RCVBUF_BYTES, "{rcvbuf}");
    assert_eq!(w.asked, RecvWait::Auto);
    assert_eq!(w.small_buffer_calls, w.recv_calls, "{w:?}");
    assert_eq!((w.naps, w.empty_polls), (0, 0), "{w:?}");

    // Unlimited, autotuning grows the buffer within the first round trips; once the kernel
    // reports it at 1.5 MiB or more, `auto` checks the socket instead of blocking blindly.
    let r = stream_to(&d, &["-t", "1", "-l", "128K"]);
    let (dir, flow) = direction(&r);
    let w = dir.recv_wait.expect("reported");
    let rcvbuf = u64::from(flow.rcvbuf_bytes.expect("SO_RCVBUF read at close"));
    eprintln!("auto, unlimited: SO_RCVBUF {rcvbuf} at close; {w:?}");
    assert_eq!((w.asked, w.large_calls), (RecvWait::Auto, 0), "{w:?}");
    if rcvbuf >= NAP_MIN_RCVBUF_BYTES {
        assert!(w.recv_calls > 1000, "{w:?}");
        assert!(w.small_buffer_calls < w.recv_calls, "{w:?}");
    } else {
        assert_eq!(w.small_buffer_calls, w.recv_calls, "{w:?}");
    }
}

#[test]
fn a_wait_the_engine_cannot_honour_is_refused() {
    let _shared = crate::common::shared();
    let many = wb(&["stream", "-t", "1", "-P", "40", "--recv-wait", "nap"]);
    assert_eq!(many.code, 2, "{}", many.stderr);
    assert!(many.stderr.contains("--recv-wait"), "{}", many.stderr);
    assert!(many.stderr.contains("epoll"), "{}", many.stderr);
    let zc = wb(&[
        "stream",
        "-t",
        "1",
        "--recv-path",
        "uring",
        "--recv-wait",
        "spin",
    ]);
    assert_eq!(zc.code, 2, "{}", zc.stderr);
    assert!(
        zc.stderr.contains("uring waits its own way"),
        "{}",
        zc.stderr
    );
}

/// `f()`, while `perf stat` counts the `clock_nanosleep` calls of process `pid` (every
/// thread's, from before `f` to after it): `f`'s result and the count. `None` for the
/// count if perf cannot count the tracepoint here (no perf, no tracefs, not permitted).
fn counting_nanosleeps<R>(pid: u32, f: impl FnOnce() -> R) -> (R, Option<u64>) {
    let perf = std::process::Command::new("perf")
        .args([
            "stat",
            "-x,",
            "-e",
            "syscalls:sys_enter_clock_nanosleep",
            "-p",
        ])
        .arg(pid.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(perf) = perf else {
        return (f(), None);
    };
    // perf attaches to the process's threads as it starts; give it the time.
    thread::sleep(Duration::from_millis(500));
    let r = f();
    let _ = std::process::Command::new("kill")
        .args(["-INT", &perf.id().to_string()])
        .status();
    let out = perf.wait_with_output().ok();
    let count = out.and_then(|o| {
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .find(|l| l.contains("sys_enter_clock_nanosleep"))
            .and_then(|l| l.split(',').next()?.trim().parse::<u64>().ok())
    });
    (r, count)
}

/// The epoll engine (40 flows): the client's senders write 4 KiB calls on CPU 0, which
/// costs them far more per byte than the daemon's workers on CPU 1 spend reading 1 MiB
/// calls, so the workers find nothing to read many times a second, even with half their
/// CPU taken by something else (with the senders' 1 MiB calls and such a neighbour, the
/// workers were the limit and napped 2 and 14 times in 2 s).
/// Ground truth: the daemon's `clock_nanosleep` calls, which `perf stat` counts at the
/// syscall tracepoint (a nap is one call of 20 µs; the kernel's context-switch counts miss
/// naps whose timer fired while a softirq held the CPU).
#[test]
fn an_epoll_worker_naps_on_its_own_timer_and_each_nap_is_a_sleep_call() {
    let _s = serial();
    let d = LocalDaemon::start(&[]);
    let base = [
        "-t",
        "2",
        "-P",
        "40",
        "--send-size",
        "4K",
        "-A",
        "0,1",
        "-C",
        "cubic",
    ];
    let with = |wait: &'static str| -> Vec<&'static str> {
        let mut a = base.to_vec();
        a.extend(["--recv-wait", wait]);
        a
    };
    // `block`: the daemon's sleeps outside the workers (its control and sampling threads).
    let (r, baseline) = counting_nanosleeps(d.pid(), || stream_to(&d, &with("block")));
    let Some(baseline) = baseline else {
        let ok = wirebench_sys::require::capability(
            "perf",
            false,
            "perf stat cannot count syscalls:sys_enter_clock_nanosleep here",
        );
        assert!(!ok);
        return;
    };
    let w = direction(&r)
        .0
        .recv_wait
        .expect("the workers report their wait");
    // One record per worker of the receiving end (the engine it reports), none per flow.
    let server = r.runs[0].server.as_ref().expect("the server's report");
    let Some(EngineKind::Epoll { workers, .. }) = server.engine else {
        panic!("40 flows run on the epoll engine: {:?}", server.engine)
    };
    assert_eq!(
        (w.asked, w.epoll_workers),
        (RecvWait::Block, workers),
        "{w:?}"
    );
    let stream = server.stream().expect("the server's stream report");
    assert_eq!(stream.worker_waits.len(), workers as usize);
    assert!(stream.flows.iter().all(|f| f.recv_wait.is_none()));
    assert_eq!(
        (w.empty_polls, w.naps, w.nap_ns, w.blocking_waits),
        (0, 0, 0, 0)
    );
    assert!(w.recv_calls > 0, "{w:?}");

    // `auto`, the default: 1 MiB calls, but 40 flows on the worker (NAP_SHARED_FLOWS) and
    // their autotuned buffers sum far above the bound, so it naps.
    let (r, sleeps) = counting_nanosleeps(d.pid(), || stream_to(&d, &with("auto")));
    let sleeps = sleeps.expect("perf counted the block run");
    let w = direction(&r).0.recv_wait.expect("reported");
    eprintln!("epoll auto: {w:?}; {sleeps} clock_nanosleep calls, {baseline} with block");
    assert_eq!((w.asked, w.epoll_workers), (RecvWait::Auto, workers));
    assert_eq!((w.large_calls, w.small_buffer_calls), (0, 0), "{w:?}");
    assert!(w.naps > 100, "{w:?}");
    assert!(w.nap_ns >= w.naps * NAP_US * 1000, "{w:?}");
    assert!(w.empty_polls >= w.naps, "{w:?}");
    // Every nap reported is a sleep call the kernel saw, and the workers made no sleep
    // calls they did not report (beyond what the rest of the daemon makes in a run).
    assert!(
        sleeps >= w.naps,
        "{} naps reported, {sleeps} clock_nanosleep calls seen",
        w.naps
    );
    assert!(
        sleeps <= w.naps + 2 * baseline + 100,
        "{} naps reported, {sleeps} clock_nanosleep calls seen ({baseline} without naps)",
        w.naps
    );
}
