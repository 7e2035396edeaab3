//! `wirebench sweep`, end to end with the real binary, against ground truth: a tbf rate
//! limit (the saturation the analysis finds), the link emulator's fixed delay (the Hockney
//! t0 of a request-size sweep), the single test's own byte reconciliation at every point,
//! and a resumed sweep after the client was killed.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::daemon::LocalDaemon;
use crate::common::*;
use wirebench_lab::{Side, Testbed, ADDR_B, IF_A};
use wirebench_model::result::WorkloadSummary;
use wirebench_model::sweep::{PointRole, SweepPoint, SweepResult, SweepStatus};

fn sweep_json(stdout: &str, stderr: &str) -> SweepResult {
    serde_json::from_str(stdout)
        .unwrap_or_else(|e| panic!("not a SweepResult ({e}):\n{stdout}\nstderr:\n{stderr}"))
}

/// Through a 100 Mbit/s tbf limit, the saturation of a message-size sweep is the limit's
/// payload rate (tbf meters link-layer bytes: MSS + 66 header bytes per segment).
#[test]
fn saturation_equals_a_tbf_rate_limit() {
    require_netns();
    let _g = link_bound();
    let tb = Testbed::pair(1500).expect("testbed");
    tb.rate_limit(Side::A, 100_000_000).unwrap();
    let _d = daemon_in(&tb, Side::B, &[]);
    let r = wb_in(
        &tb,
        Side::A,
        &[
            "sweep",
            "stream",
            "-H",
            ADDR_B,
            "-t",
            "1",
            "--warmup",
            "0.5",
            "--msg-size",
            "8K..128K",
            "--points-per-octave",
            "1",
            "--perturb",
            "0",
            "--no-remeasure",
            "--json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = sweep_json(&r.stdout, &r.stderr);
    assert_eq!(s.status, SweepStatus::Completed);
    assert_eq!(s.points.len(), 5);
    let a = s.analysis[0]
        .throughput
        .as_ref()
        .expect("throughput analysis");
    assert!(a.saturated, "{a:?}");
    let mss = 1448.0;
    let expect = 100e6 * mss / (mss + 66.0);
    let dev = (a.saturation_bps - expect) / expect;
    assert!(
        dev.abs() < 0.03,
        "saturation {:.0} bit/s, limit allows {expect:.0} ({:+.2}%)",
        a.saturation_bps,
        dev * 100.0
    );
}

/// Through the emulator with 1 ms each way, a request-size sweep's Hockney t0 (the
/// round trip of a zero-byte message) is the path's round trip within 10 %: the 2 ms the
/// emulator adds plus its forwarding, as an independent ping-pong on the same path sees it.
#[test]
fn hockney_t0_is_the_emulated_round_trip() {
    require_netns();
    let _g = link_bound();
    let (path, d) = delayed_path_with_daemon(Duration::from_millis(1));
    let port = d.addr.port().to_string();
    let mut c = path.command(Side::A, BIN);
    c.args([
        "sweep",
        "rr",
        "-H",
        ADDR_B,
        "-p",
        &port,
        "-t",
        "1",
        "--request-size",
        "1,256,1K,4K",
        "--perturb",
        "0",
        "--json",
    ]);
    let out = c.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let s = sweep_json(&stdout, &stderr);
    for p in &s.points {
        assert!(
            p.figure.is_some(),
            "point {}: {:?}",
            p.index,
            p.result.error
        );
    }
    assert_eq!(s.points.len(), 4, "{:?}", s.error);
    let h = s.analysis[0].hockney.as_ref().expect("Hockney fit");
    // The path's real zero-size round trip: the 2 emulated ms plus the forwarder's own
    // work, seen by an independent ping-pong on the same path.
    let probe_ns = ping_pong_p50_ns(&path, 300) as f64;
    eprintln!(
        "t0 {:.0} ns, slope {:.3} ns/B; independent ping-pong p50 {probe_ns:.0} ns",
        h.t0_ns, h.slope_ns_per_byte
    );
    assert!(probe_ns >= 2e6, "probe {probe_ns} ns");
    assert!(
        h.t0_ns >= 0.95 * 2e6 && (h.t0_ns - probe_ns).abs() <= 0.1 * probe_ns,
        "t0 {:.0} ns: expected the path's round trip {probe_ns:.0} ns ± 10 % (and >= 1.9 ms)",
        h.t0_ns
    );
}

/// Every point of a loopback sweep reconciles its bytes as a single test does: what the
/// senders wrote, the receivers read; and its figure is the single test's.
#[test]
fn every_point_reconciles_its_bytes() {
    // Shared: byte accounting and the point's figure against its own result; no rate.
    let _g = shared();
    let db = std::env::temp_dir().join(format!("wb-sweep-history-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&db);
    let r = wb(&[
        "sweep",
        "stream",
        "--msg-size",
        "1K,64K,1M",
        "--perturb",
        "0",
        "--flows",
        "1,2",
        "-t",
        "0.3",
        "--json",
        "--db",
        db.to_str().unwrap(),
        "--tag",
        "grid=2x3",
        "-T",
        "grid of sizes",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = sweep_json(&r.stdout, &r.stderr);
    // The sweep is saved to the history as one result (not a row per point), the document
    // it printed.
    let listed = wb(&["history", "list", "--json", "--db", db.to_str().unwrap()]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["kind"], "sweep");
    assert_eq!(rows[0]["workload"], "stream");
    assert_eq!(rows[0]["tags"]["grid"], "2x3");
    assert_eq!(rows[0]["title"], "grid of sizes");
    let id = rows[0]["id"].to_string();
    let shown = wb(&[
        "history",
        "show",
        &id,
        "--json",
        "--db",
        db.to_str().unwrap(),
    ]);
    let stored: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    let printed: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(stored, printed);
    let shown = wb(&["history", "show", &id, "--db", db.to_str().unwrap()]);
    assert!(shown.stdout.contains("points"), "{}", shown.stdout);
    let _ = std::fs::remove_file(&db);
    let grid: Vec<_> = s
        .points
        .iter()
        .filter(|p| p.role == PointRole::Grid)
        .collect();
    assert_eq!(grid.len(), 6);
    for p in grid {
        let run = &p.result.runs[0];
        let Some(WorkloadSummary::Stream(st)) = run.summary.as_ref().map(|s| &s.workload) else {
            panic!("point {} has no stream summary", p.index);
        };
        for d in &st.directions {
            assert_eq!(d.unaccounted_bytes, Some(0), "point {}: {d:?}", p.index);
            assert!(d.receiver_total_bytes > Some(0));
        }
        let total: f64 = st
            .directions
            .iter()
            .map(|d| d.receiver_throughput_bps)
            .sum();
        match p.figure {
            Some(wirebench_model::sweep::PointFigure::Throughput { throughput_bps, .. }) => {
                assert_eq!(throughput_bps, total)
            }
            ref f => panic!("{f:?}"),
        }
    }
}

/// Start `wirebench sweep stream` over 7 message sizes (1K..64K) writing to `dir`, and return
/// once `dir/points/` holds at least two point files (or after 60 s, whatever it has): the
/// point files are written at every point, `sweep.json` only every 2 s and at the end.
fn sweep_until_two_points(dir: &std::path::Path, extra: &[&str]) -> std::process::Child {
    let d = dir.display().to_string();
    let mut args = vec![
        "sweep",
        "stream",
        "--msg-size",
        "1K..64K",
        "--points-per-octave",
        "1",
        "--perturb",
        "0",
        "-t",
        "0.3",
        "-o",
        &d,
    ];
    args.extend_from_slice(extra);
    let child = Command::new(BIN)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(60) {
        if point_files(dir).len() >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// The points written to `dir/points/`, in index order.
fn point_files(dir: &std::path::Path) -> Vec<SweepPoint> {
    let mut names: Vec<_> = std::fs::read_dir(dir.join("points"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    names.retain(|p| p.extension().is_some_and(|e| e == "json"));
    names.sort();
    names
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|t| serde_json::from_str(&t).expect("a whole point file"))
        .collect()
}

/// A sweep killed with SIGKILL and resumed measures every planned point exactly once: the
/// resume takes `sweep.json` (status `running`, rewritten only every 2 s, so it may hold
/// fewer points) together with the point files written after it.
#[test]
fn resume_after_sigkill_completes_the_same_point_set() {
    // Shared: which points exist before and after the kill; no figure.
    let _g = shared();
    let dir = std::env::temp_dir().join(format!("wb-sweep-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.display().to_string();
    let mut child = sweep_until_two_points(&dir, &["--no-remeasure"]);
    kill(child.id(), "-KILL");
    let _ = child.wait();
    let doc: SweepResult =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(doc.status, SweepStatus::Running);
    let before = point_files(&dir);
    assert!(
        before.len() >= 2 && before.len() < 7 && doc.points.len() <= before.len(),
        "{} point files, {} in sweep.json",
        before.len(),
        doc.points.len()
    );
    let r = wb(&["sweep", "stream", "--resume", &d, "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let after = sweep_json(&r.stdout, &r.stderr);
    assert_eq!(after.status, SweepStatus::Completed);
    let sizes: Vec<u64> = after
        .points
        .iter()
        .map(|p| p.settings[0].value.number().unwrap())
        .collect();
    let set: BTreeSet<u64> = sizes.iter().copied().collect();
    assert_eq!(sizes.len(), set.len(), "a point measured twice: {sizes:?}");
    assert_eq!(
        set,
        [1024, 2048, 4096, 8192, 16384, 32768, 65536]
            .into_iter()
            .collect()
    );
    // The points measured before the kill were kept, not measured again.
    for p in &before {
        assert!(after.points.contains(p));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bad input is refused before anything runs, naming the factor; `--json` gets a document.
#[test]
fn bad_input_is_refused_before_anything_runs() {
    let _shared = crate::common::shared();
    let r = wb(&["sweep", "stream", "--msg-size", "4K..1K"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("--msg-size 4K..1K: empty range"),
        "{}",
        r.stderr
    );
    let r = wb(&["sweep", "crr", "--burst", "1,2", "--json"]);
    assert_eq!(r.code, 2);
    let s = sweep_json(&r.stdout, &r.stderr);
    assert_eq!(s.status, SweepStatus::Invalid);
    assert_eq!(s.error.as_deref(), Some("--burst is not a factor of `crr`"));
}

/// The backlog of side A's root qdisc, bytes (`tc -s qdisc show`).
fn backlog_bytes(tb: &Testbed) -> Option<u64> {
    let out = tb
        .command(Side::A, "tc")
        .args(["-s", "qdisc", "show", "dev", IF_A])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let at = text.find("backlog ")? + "backlog ".len();
    let num: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    // tc writes large backlogs with a unit: "612Kb", "1.2Mb".
    let rest = &text[at + num.len()..];
    let mult = match rest.chars().next() {
        Some('K') => 1000,
        Some('M') => 1_000_000,
        _ => 1,
    };
    if mult != 1 || rest.starts_with('.') {
        // A unit or a fraction: take the whole token.
        let tok: String = text[at..]
            .chars()
            .take_while(|c| !c.is_whitespace())
            .collect();
        let v: f64 = tok.trim_end_matches(['b', 'K', 'M']).parse().ok()?;
        let m = if tok.contains('M') {
            1e6
        } else if tok.contains('K') {
            1e3
        } else {
            1.0
        };
        return Some((v * m) as u64);
    }
    num.parse().ok()
}

/// `rr --under-load` through a 50 Mbit/s tbf with a deep queue: the induced latency is the
/// queue's drain time (the backlog tc reports while the load runs, over the rate) within
/// 20 %, and the idle round trip is far below it.
#[test]
fn induced_latency_is_the_queue_drain_time() {
    require_netns();
    let _g = serial();
    let tb = Testbed::pair(1500).expect("testbed");
    let ok = tb
        .command(Side::A, "tc")
        .args([
            "qdisc", "replace", "dev", IF_A, "root", "tbf", "rate", "50mbit", "burst", "64kb",
            "limit", "500000",
        ])
        .status()
        .unwrap()
        .success();
    assert!(ok, "tc tbf");
    let _d = daemon_in(&tb, Side::B, &["--max-tests-per-peer", "2"]);
    let stop = AtomicBool::new(false);
    let (r, samples) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut v = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                if let Some(b) = backlog_bytes(&tb) {
                    v.push(b);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            v
        });
        let r = wb_in(
            &tb,
            Side::A,
            &[
                "rr",
                "-H",
                ADDR_B,
                "-t",
                "3",
                "--under-load",
                "2",
                "--load-direction",
                "forward",
                "-C",
                "cubic",
                "--json",
            ],
        );
        stop.store(true, Ordering::Relaxed);
        (r, sampler.join().unwrap())
    });
    assert_eq!(r.code, 0, "{}\n{}", r.stderr, r.stdout);
    let res = r.json();
    let u = res.under_load.as_ref().expect("under_load");
    let s = u.summary.expect("summary");
    // The queue while loaded: the samples where the load keeps it above 10 % of its limit.
    let mut busy: Vec<u64> = samples.into_iter().filter(|&b| b > 50_000).collect();
    assert!(busy.len() >= 20, "{} loaded samples", busy.len());
    busy.sort_unstable();
    let backlog = busy[busy.len() / 2] as f64;
    let drain_ns = backlog * 8.0 / 50e6 * 1e9;
    eprintln!(
        "median backlog {backlog:.0} B = {:.1} ms at 50 Mbit/s; induced p50 {:.1} ms; idle p50 {:.1} µs",
        drain_ns / 1e6,
        s.induced_p50_ns as f64 / 1e6,
        s.idle_rtt_p50_ns as f64 / 1e3
    );
    let dev = (s.induced_p50_ns as f64 - drain_ns) / drain_ns;
    assert!(
        dev.abs() <= 0.2,
        "induced {} ns vs drain {drain_ns:.0} ns ({:+.1} %)",
        s.induced_p50_ns,
        dev * 100.0
    );
    // The tail waited in the same queue: the 99th percentile's induced latency is beyond
    // its own noise, and the loaded p99 at least most of the drain time.
    assert!(
        matches!(
            s.induced_p99_reading,
            Some(wirebench_model::result::InducedReading::Raised { .. })
        ),
        "{:?} (induced p99 {} ns)",
        s.induced_p99_reading,
        s.induced_p99_ns
    );
    assert!(
        s.loaded_rtt_p99_ns as f64 >= 0.8 * drain_ns,
        "loaded p99 {} ns vs drain {drain_ns:.0} ns",
        s.loaded_rtt_p99_ns
    );
    // Without load the queue is empty: the idle round trip is a small fraction of it.
    assert!(
        (s.idle_rtt_p50_ns as f64) < 0.1 * drain_ns,
        "idle p50 {}",
        s.idle_rtt_p50_ns
    );
    // The boxes of the under-load figure, read from each run's histogram: the loaded
    // median agrees with the reported one within the bucket width, and the queue lifts the
    // loaded distribution's lower quartile above the idle median.
    let idle_box = wirebench_analysis::under_load::latency_box(&u.idle).expect("idle box");
    let loaded_box = wirebench_analysis::under_load::latency_box(&res).expect("loaded box");
    assert!(
        (loaded_box.p50_ns / s.loaded_rtt_p50_ns as f64 - 1.0).abs() < 0.1,
        "box median {} vs p50 {}",
        loaded_box.p50_ns,
        s.loaded_rtt_p50_ns
    );
    assert!(
        loaded_box.p25_ns > idle_box.p50_ns,
        "{loaded_box:?} vs {idle_box:?}"
    );
    // The load ran at the link's payload rate, near 50 Mbit/s.
    assert!(
        (40e6..50e6).contains(&s.load_throughput_bps),
        "{}",
        s.load_throughput_bps
    );
}

/// A point the server refuses (above its `--max-flows`) is recorded as failed with the
/// server's reason, and the sweep goes on to the next point.
#[test]
fn a_refused_point_is_recorded_and_the_sweep_goes_on() {
    let _g = serial();
    let d = LocalDaemon::start(&["--max-flows", "2"]);
    let port = d.addr.port().to_string();
    let r = wb(&[
        "sweep",
        "stream",
        "-H",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "0.3",
        "--flows",
        "1,4,2",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let s = sweep_json(&r.stdout, &r.stderr);
    assert_eq!(s.status, SweepStatus::Completed);
    let by_flows: Vec<(u64, bool)> = s
        .points
        .iter()
        .map(|p| (p.settings[0].value.number().unwrap(), p.figure.is_some()))
        .collect();
    assert_eq!(by_flows, vec![(1, true), (2, true), (4, false)]);
    let failed = s.points.iter().find(|p| p.figure.is_none()).unwrap();
    let e = failed.result.error.as_ref().expect("the refusal");
    assert!(e.message.contains("--max-flows"), "{}", e.message);
}

/// Ctrl-C (SIGINT) ends the sweep after the point under way: every completed point is kept
/// and written, the sweep says so and how to resume, and exits 130.
#[test]
fn sigint_keeps_the_completed_points_and_says_so() {
    let _g = serial();
    let dir = std::env::temp_dir().join(format!("wb-sweep-int-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let child = sweep_until_two_points(&dir, &[]);
    kill(child.id(), "-INT");
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stdout}");
    assert!(
        stdout.contains("interrupted:") && stdout.contains("--resume"),
        "{stdout}"
    );
    // The plan was said before the first point.
    assert!(
        stdout.starts_with("sweep of stream: 7 points, about "),
        "{stdout}"
    );
    let s: SweepResult =
        serde_json::from_str(&std::fs::read_to_string(dir.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(s.status, SweepStatus::Interrupted);
    assert!(
        s.points.len() >= 2 && s.points.len() < 7,
        "{}",
        s.points.len()
    );
    // Its analysis is labelled partial, in the text and in the document.
    assert!(
        stdout.contains(&format!(
            "analysis of a partial sweep ({} of 7 planned grid points measured)",
            s.points.len()
        )) && stdout.contains("partial ("),
        "{stdout}"
    );
    assert!(!s.analysis.is_empty());
    for c in &s.analysis {
        assert!(c.partial && c.planned_points == 7, "{c:?}");
    }
    assert!(!stdout.contains("saturates at"), "{stdout}");
    // Every kept point completed, and each has its own file.
    for p in &s.points {
        assert!(p.figure.is_some(), "point {}", p.index);
        assert!(dir
            .join("points")
            .join(format!("{:04}.json", p.index))
            .exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--dry-run` prints the points, the estimate and every point's command, and runs
/// nothing: a listener standing in for the server is never connected to, and it exits 0.
#[test]
fn dry_run_prints_the_plan_and_contacts_nobody() {
    let _g = shared();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let r = wb(&[
        "sweep",
        "stream",
        "-H",
        "127.0.0.1",
        "-p",
        &port,
        "--msg-size",
        "1K..1M",
        "--dry-run",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // 1K..1M: 10 octaves at 4 points each, 41 sizes, each also at -3 and +3 bytes.
    assert!(
        r.stdout.starts_with("sweep of stream: 123 points, about "),
        "{}",
        r.stdout
    );
    let commands: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with("wirebench stream "))
        .collect();
    assert_eq!(commands.len(), 123, "{}", r.stdout);
    assert_eq!(
        commands[0],
        format!("wirebench stream -H 127.0.0.1 -p {port} --msg-size 1021 -t 0.5")
    );
    assert!(
        r.stdout.ends_with("dry run: nothing was run\n"),
        "{}",
        r.stdout
    );
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the dry run connected: {other:?}"),
    }
    // The estimate of a fixed length: 3 points x (1 s + 0.5 s warm-up + 0.05 s setup).
    let r = wb(&[
        "sweep",
        "stream",
        "-H",
        "192.0.2.1",
        "--flows",
        "1,2,4",
        "-t",
        "1",
        "--warmup",
        "0.5",
        "--dry-run",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .starts_with("sweep of stream: 3 points, about 4.7 s (1.6 s per point"),
        "{}",
        r.stdout
    );
}

/// `sweep --help` lists every flag a point accepts: each long flag of each test
/// subcommand's clap definition (the same the points are parsed with) and every factor.
#[test]
fn sweep_help_lists_every_flag_a_point_accepts() {
    let _g = shared();
    let r = wb(&["sweep", "--help"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let listed = |flag: &str| {
        r.stdout.match_indices(flag).any(|(i, _)| {
            let next = r.stdout[i + flag.len()..].chars().next();
            !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
        })
    };
    let root = wirebench::cli::command();
    let mut checked = 0;
    for test in ["stream", "rr", "crr", "udp"] {
        let cmd = root.find_subcommand(test).expect(test);
        for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let Some(long) = a.get_long() else { continue };
            if long == "help" {
                continue;
            }
            assert!(
                listed(&format!("--{long}")),
                "{test} --{long} is not in sweep --help"
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} flags checked");
    for f in wirebench_model::sweep::FactorName::ALL {
        assert!(
            listed(f.flag()),
            "factor {} is not in sweep --help",
            f.flag()
        );
    }
    for own in ["--dry-run", "--max-point-time", "--force", "--resume"] {
        assert!(listed(own), "{own}");
    }
}
