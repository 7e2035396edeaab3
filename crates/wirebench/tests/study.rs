//! `wirebench study`, end to end with the real binary on real namespace testbeds: a 2×2
//! study (MTU × send path) whose cells are checked against the kernel's own evidence (each
//! connection's MSS follows the cell's MTU), whose points reconcile their bytes and whose
//! expectation is recomputed from `results.jsonl`; a study killed with SIGKILL and resumed;
//! Ctrl-C; bad input refused before anything is built. After each, no namespace, veth or
//! process of the study is left.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use wirebench_model::result::WorkloadSummary;
use wirebench_model::study::{
    FigureName, StudyFactor, StudyManifest, StudyPoint, StudyStatus, TestbedFactor, Verdict,
};
use wirebench_model::sweep::FactorValue;

/// A study directory under the temp dir, removed on drop; a study process it started is
/// killed, and its labs' namespaces removed, even when the test fails.
struct Scratch {
    dir: PathBuf,
    child: Option<Child>,
    pids: Vec<u32>,
}

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("wb-study-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch {
            dir,
            child: None,
            pids: Vec::new(),
        }
    }

    fn file(&self, text: &str) -> String {
        let p = self.dir.join("study.toml");
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }

    fn out(&self) -> String {
        self.dir.join("out").display().to_string()
    }

    fn spawn(&mut self, args: &[&str]) {
        let c = Command::new(BIN)
            .args(args)
            .env("WIREBENCH_LAB_DIR", self.dir.join("labs"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.pids.push(c.id());
        self.child = Some(c);
    }

    /// Spawns the study (its PID recorded for the cleanup checks) and waits for its exit
    /// code.
    fn run_to_end(&mut self, args: &[&str]) -> Option<i32> {
        self.spawn(args);
        let status = self.child.as_mut().unwrap().wait().unwrap();
        self.child = None;
        status.code()
    }

    /// Runs the study to its end, its PID recorded for the cleanup checks.
    fn run(&mut self, args: &[&str]) -> Ran {
        self.run_program(BIN, args)
    }

    /// Runs `program ARGS` to its end (e.g. the binary under `strace`), its PID recorded.
    fn run_program(&mut self, program: &str, args: &[&str]) -> Ran {
        let child = Command::new(program)
            .args(args)
            .env("WIREBENCH_LAB_DIR", self.dir.join("labs"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        self.pids.push(child.id());
        let out = child.wait_with_output().unwrap();
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
        for pid in &self.pids {
            for ns in lab_namespaces(*pid) {
                let _ = Command::new("ip").args(["netns", "del", &ns]).status();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Namespaces of the labs a study process `pid` builds (`wbl-st-PID-c/-s/-m`).
fn lab_namespaces(pid: u32) -> Vec<String> {
    let prefix = format!("wbl-st-{pid}-");
    std::fs::read_dir("/var/run/netns")
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Processes whose environment holds `needle` (the study marks its daemons with
/// `WIREBENCH_STUDY=<lab>`).
fn processes_with_env(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|c| c.split(|b| *b == 0).any(|v| v == needle.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

/// Nothing of study process `pid` is left: its labs' namespaces (and with them their veths
/// and addresses), the daemons it started, host interfaces named like a lab's.
fn assert_nothing_left(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let ns = lab_namespaces(pid);
        let daemons = processes_with_env(&format!("WIREBENCH_STUDY=st-{pid}"));
        let links = String::from_utf8_lossy(
            &Command::new("ip")
                .args(["-o", "link"])
                .output()
                .unwrap()
                .stdout,
        )
        .into_owned();
        let host_veths: Vec<&str> = links
            .lines()
            .filter(|l| l.contains(": wbc") || l.contains(": wbs") || l.contains(": wbm"))
            .collect();
        if ns.is_empty() && daemons.is_empty() && host_veths.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "left behind by study {pid}: namespaces {ns:?}, daemons {daemons:?}, host links {host_veths:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn manifest(dir: &Path) -> StudyManifest {
    serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap()
}

fn points(dir: &Path) -> Vec<StudyPoint> {
    std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("half a record? {e}: {l}")))
        .collect()
}

fn level(p: &StudyPoint, f: StudyFactor) -> FactorValue {
    p.levels
        .iter()
        .find(|l| l.factor == f)
        .map(|l| l.value.clone())
        .unwrap_or_else(|| panic!("point without {f:?}: {:?}", p.levels))
}

const MTU: StudyFactor = StudyFactor::Testbed(TestbedFactor::Mtu);

const TWO_BY_TWO: &str = r#"
title = "2x2: MTU x send path"

[options]
time = 0.5
repeat = 2

[testbed]
cc = "cubic"

[factors]
mtu = [1500, 9000]

[[test]]
command = "stream"
args = ["-l", "128K"]
[test.factors]
send_path = ["copy", "sendfile"]

[[expect]]
name = "sendfile is at least a fifth of copy"
figure = "throughput_bps"
numerator = { send_path = "sendfile" }
denominator = { send_path = "copy" }
op = ">"
value = 0.2
"#;

/// A 2×2 study repeated twice end to end: every cell built once per round, the rounds
/// interleaved (both cells' round 1 before either's round 2), every point present in each
/// round, the testbed applied (the kernel's MSS of every connection is the cell's MTU minus
/// 52 header bytes), every point's bytes reconciled, the expectation evaluated on the
/// medians of the figures in `results.jsonl` with the spread of the two rounds.
#[test]
fn two_by_two_study_end_to_end() {
    require_netns();
    let _g = serial();
    let mut s = Scratch::new("2x2");
    let file = s.file(TWO_BY_TWO);
    let out = s.out();
    let db = format!("{out}.history.db");
    assert_eq!(
        s.run_to_end(&["study", "run", &file, "-o", &out, "--db", &db]),
        Some(0)
    );
    let dir = PathBuf::from(&out);
    let m = manifest(&dir);
    // The study is saved to the history as one result holding its manifest and points.
    let listed = s.run(&["history", "list", "--json", "--db", &db]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["kind"], "study");
    let id = rows[0]["id"].to_string();
    let shown = s.run(&["history", "show", &id, "--json", "--db", &db]);
    let stored: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(stored["manifest"]["title"], m.title.as_str());
    assert_eq!(
        stored["points"].as_array().map(Vec::len),
        Some(points(&dir).len())
    );
    let _ = std::fs::remove_file(&db);
    assert_eq!(m.status, StudyStatus::Completed);
    assert_eq!(m.repeat, 2);
    // Interleaved: round 1 of both cells, then round 2.
    let order: Vec<(u32, u32)> = m.cells.iter().map(|c| (c.round, c.index)).collect();
    assert_eq!(order, vec![(1, 0), (1, 1), (2, 0), (2, 1)]);
    for c in &m.cells {
        assert_eq!(c.status, StudyStatus::Completed, "{c:?}");
        let tb = c.testbed.as_ref().expect("testbed read back");
        let mtu = c
            .levels
            .iter()
            .find(|l| l.factor == MTU)
            .and_then(|l| l.value.number())
            .unwrap() as u32;
        for end in [&tb.client, &tb.server] {
            let end = end.as_ref().expect("both ends read back");
            assert_eq!(end.mtu_bytes, mtu);
            assert_eq!(end.route_congestion.as_deref(), Some("cubic"));
        }
        assert!(c.build_ms.unwrap() > 0.0 && c.teardown_ms.unwrap() > 0.0);
    }
    let pts = points(&dir);
    let seen: BTreeSet<(u64, String)> = pts
        .iter()
        .map(|p| {
            let FactorValue::Name(path) = level(
                p,
                StudyFactor::Test(wirebench_model::sweep::FactorName::SendPath),
            ) else {
                panic!()
            };
            (level(p, MTU).number().unwrap(), path)
        })
        .collect();
    assert_eq!(pts.len(), 8, "{seen:?}");
    assert_eq!(seen.len(), 4);
    // Measured in the manifest's order: every round-1 point before any round-2 point, and
    // each (cell, round) in its place.
    let measured: Vec<(u32, u32)> = pts.iter().map(|p| (p.round, p.cell)).collect();
    assert_eq!(
        measured,
        vec![
            (1, 0),
            (1, 0),
            (1, 1),
            (1, 1),
            (2, 0),
            (2, 0),
            (2, 1),
            (2, 1)
        ]
    );
    for p in &pts {
        let mtu = level(p, MTU).number().unwrap() as u32;
        // Every point records the testbed its cell read back in its round.
        let rec = m
            .cells
            .iter()
            .find(|c| c.index == p.cell && c.round == p.round)
            .unwrap();
        assert_eq!(p.result.testbed.as_deref(), rec.testbed.as_ref());
        let run = &p.result.runs[0];
        let Some(WorkloadSummary::Stream(st)) = run.summary.as_ref().map(|s| &s.workload) else {
            panic!("no stream summary: {:?}", p.result.error);
        };
        for d in &st.directions {
            assert_eq!(d.unaccounted_bytes, Some(0), "{d:?}");
            assert!(d.receiver_total_bytes > Some(0));
        }
        // The kernel's evidence that the cell's MTU was in force: each data socket's MSS
        // (IPv4 20 + TCP 20 + timestamps 12 bytes of headers).
        for side in [&run.client, &run.server] {
            let side = side.as_ref().unwrap();
            for f in &side.stream().unwrap().flows {
                let ti = f.socket.tcp_info.as_ref().expect("TCP_INFO");
                let mss = ti.snd_mss_bytes.max(ti.rcv_mss_bytes);
                assert_eq!(mss, mtu - 52, "mtu {mtu}: {ti:?}");
            }
        }
    }
    // The expectation, recomputed from the figures in results.jsonl.
    let e = &m.expectations[0];
    assert_ne!(e.verdict, Verdict::NoData);
    assert_eq!(e.cases.len(), 2);
    for c in &e.cases {
        let mtu = c
            .group
            .iter()
            .find(|l| l.factor == MTU)
            .unwrap()
            .value
            .clone();
        // Each round's figure, in round order.
        let bps = |path: &str| -> Vec<f64> {
            let v: Vec<(u32, f64)> = pts
                .iter()
                .filter(|p| {
                    level(p, MTU) == mtu
                        && level(
                            p,
                            StudyFactor::Test(wirebench_model::sweep::FactorName::SendPath),
                        ) == FactorValue::Name(path.into())
                })
                .map(|p| {
                    let bps = p
                        .figures
                        .iter()
                        .find(|f| f.figure == FigureName::ThroughputBps)
                        .unwrap()
                        .value;
                    (p.round, bps)
                })
                .collect();
            assert_eq!(v.len(), 2, "one point per round");
            let mut v = v;
            v.sort_by_key(|(r, _)| *r);
            assert_eq!((v[0].0, v[1].0), (1, 2), "rounds 1 and 2");
            v.into_iter().map(|(_, b)| b).collect()
        };
        let (sf, cp) = (bps("sendfile"), bps("copy"));
        // Both sides ran in both rounds: judged on the two paired ratios, their median
        // (mean) and range.
        let (r1, r2) = (sf[0] / cp[0], sf[1] / cp[1]);
        let ratio = (r1 + r2) / 2.0;
        let (lo, hi) = (r1.min(r2), r1.max(r2));
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.abs().max(1.0);
        assert_eq!(c.paired_rounds, Some(2));
        assert!(close(c.value, ratio), "{} vs {ratio}", c.value);
        assert!(close(c.value_min, lo) && close(c.value_max, hi));
        let want = if lo <= 0.2 && 0.2 <= hi {
            Verdict::Inconclusive
        } else if ratio > 0.2 {
            Verdict::Holds
        } else {
            Verdict::DoesNotHold
        };
        assert_eq!(c.verdict, want);
    }
    // points.csv has a row per point, with its round.
    let csv = std::fs::read_to_string(dir.join("points.csv")).unwrap();
    assert_eq!(csv.lines().count(), 9, "{csv}");
    assert!(csv.starts_with("cell,round,test,"), "{csv}");
    // `study show` prints the pivot and the expectation from the directory.
    let show = s.run(&["study", "show", &out]);
    assert_eq!(show.code, 0, "{}", show.stderr);
    assert!(
        show.stdout.contains("payload throughput at the receivers"),
        "{}",
        show.stdout
    );
    assert!(
        show.stdout.contains("send_path=sendfile"),
        "{}",
        show.stdout
    );
    assert!(
        show.stdout.contains("sendfile is at least a fifth of copy"),
        "{}",
        show.stdout
    );
    // Tables give each median with the two rounds' range.
    assert!(show.stdout.contains(", n=2)"), "{}", show.stdout);
    // The figure and the page: the seed's figure as SVG (a line per send path against the
    // MTU), and a self-contained page a real browser draws without complaint.
    let svg = s.dir.join("fig.svg").display().to_string();
    let r = s.run(&["plot", &out, "-o", &svg]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("the SVG parses as XML");
    let series = doc
        .descendants()
        .filter(|n| {
            n.has_tag_name("g")
                && n.attribute("class")
                    .is_some_and(|c| c.split_whitespace().next() == Some("series"))
        })
        .count();
    assert_eq!(series, 2, "a line per send path");
    // Each point whose two rounds differ carries an error bar (min–max).
    let bars = doc
        .descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("errorbar"))
        .count();
    let differing = [0u32, 1]
        .iter()
        .flat_map(|c| ["copy", "sendfile"].map(|path| (*c, path)))
        .filter(|(c, path)| {
            let v: Vec<f64> = pts
                .iter()
                .filter(|p| {
                    p.cell == *c
                        && level(
                            p,
                            StudyFactor::Test(wirebench_model::sweep::FactorName::SendPath),
                        ) == FactorValue::Name((*path).into())
                })
                .filter_map(|p| {
                    p.figures
                        .iter()
                        .find(|f| f.figure == FigureName::ThroughputBps)
                })
                .map(|f| f.value)
                .collect();
            v.len() == 2 && v[0] != v[1]
        })
        .count();
    assert_eq!(bars, differing, "{text}");
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert!(texts.contains(&"MTU"), "{texts:?}");
    let page = s.dir.join("study.html");
    let r = s.run(&["report", &out, "-o", &page.display().to_string()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("2x2: MTU x send path") && html.contains("Expectations"));
    assert!(
        !html.contains("<script") && !html.contains("src=\"http") && !html.contains("href=\"http")
    );
    let chromium = wirebench_plot::browser::Chromium::find()
        .unwrap_or_else(|e| panic!("capability missing: {e}"));
    let check = wirebench_plot::browser::check_page(&chromium, &page, &s.dir.join("study.png"))
        .expect("chromium run");
    let problems = check.problems(0.03);
    assert!(problems.is_empty(), "{problems:#?}");
    assert_nothing_left(s.pids[0]);
}

const FOUR_CELLS: &str = r#"
title = "resume: 4 cells"
[options]
time = 0.4
[factors]
mtu = [1500, 3000, 9000, 16000]
[[test]]
command = "stream"
"#;

/// Wait (up to 90 s) until `dir/results.jsonl` has at least `n` lines.
fn wait_points(dir: &Path, n: usize) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(90) {
        let have = std::fs::read_to_string(dir.join("results.jsonl"))
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if have >= n {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("fewer than {n} points after 90 s");
}

/// A study killed with SIGKILL leaves no daemon; resumed, it measures every missing point
/// once, keeps the ones measured before, and leaves nothing behind.
#[test]
fn resume_after_sigkill() {
    require_netns();
    // Shared: which points exist and that nothing is left; no figure.
    let _g = shared();
    let mut s = Scratch::new("resume");
    let file = s.file(FOUR_CELLS);
    let out = s.out();
    s.spawn(&["study", "run", &file, "-o", &out]);
    let dir = PathBuf::from(&out);
    wait_points(&dir, 2);
    let pid = s.pids[0];
    kill(pid, "-KILL");
    if let Some(c) = &mut s.child {
        let _ = c.wait();
    }
    s.child = None;
    let before = points(&dir);
    assert!((2..4).contains(&before.len()), "{}", before.len());
    // The daemon died with its parent (PR_SET_PDEATHSIG); the namespaces stay until the
    // next study removes the stale lab.
    let r = s.run(&["study", "run", "--resume", &out]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_nothing_left(pid);
    let after = points(&dir);
    let mtus: Vec<u64> = after
        .iter()
        .map(|p| level(p, MTU).number().unwrap())
        .collect();
    let set: BTreeSet<u64> = mtus.iter().copied().collect();
    assert_eq!(mtus.len(), set.len(), "a point measured twice: {mtus:?}");
    assert_eq!(set, [1500, 3000, 9000, 16000].into_iter().collect());
    for p in &before {
        assert!(
            after.contains(p),
            "a point measured before the kill was lost"
        );
    }
    assert_eq!(manifest(&dir).status, StudyStatus::Completed);
}

/// Ctrl-C ends the study after the point under way: completed points are kept, the
/// manifest says interrupted, exit code 130, nothing is left behind.
#[test]
fn sigint_keeps_points_and_tears_down() {
    require_netns();
    let _g = serial();
    let mut s = Scratch::new("sigint");
    let file = s.file(FOUR_CELLS);
    let out = s.out();
    s.spawn(&["study", "run", &file, "-o", &out]);
    let dir = PathBuf::from(&out);
    wait_points(&dir, 1);
    let pid = s.pids[0];
    kill(pid, "-INT");
    let code = s.child.as_mut().unwrap().wait().unwrap().code();
    s.child = None;
    assert_eq!(code, Some(130));
    assert_nothing_left(pid);
    let m = manifest(&dir);
    assert_eq!(m.status, StudyStatus::Interrupted);
    let pts = points(&dir);
    assert!(!pts.is_empty() && pts.len() < 4, "{}", pts.len());
}

/// Bad input is refused before anything is built, naming the file, line and key. What
/// "built" means is read from outside: `strace -f` sees no `ip` run (the testbed builder's
/// tool) and no `unshare(CLONE_NEWNET)`, and no namespace named after the run's PID remains.
#[test]
fn bad_input_is_refused_before_anything_is_built() {
    let _shared = crate::common::shared();
    if !wirebench_sys::require::capability(
        "strace",
        wirebench_sys::require::command_works("strace", "-V"),
        "strace is not installed",
    ) {
        return;
    }
    let mut s = Scratch::new("bad");
    let cases: [(&str, &[&str]); 6] = [
        (
            "title = \"x\"\n[options]\nrepeat = 0\n[[test]]\ncommand = \"stream\"\n",
            &["options.repeat", "not a number of rounds"],
        ),
        (
            "title = \"x\"\n[factors]\nmtu = [1500, 70000]\n[[test]]\ncommand = \"stream\"\n",
            &[":3:", "factors.mtu", "70000"],
        ),
        (
            "title = \"x\"\n[factors]\nwarp = [1]\n[[test]]\ncommand = \"stream\"\n",
            &[":3:", "factors.warp", "unknown testbed factor"],
        ),
        ("this is not toml", &["not a valid study file", ":1"]),
        (
            "title = \"x\"\n[[test]]\ncommand = \"stream\"\n[[expect]]\nname = \"n\"\nfigure = \"speed\"\nop = \">\"\nvalue = 1\n",
            &[":6:", "expect.figure", "no figure \"speed\""],
        ),
        (
            "title = \"x\"\n[[test]]\ncommand = \"stream\"\n[test.factors]\nmsg_size = \"4K..1K\"\n",
            &["msg-size", "test \"stream\""],
        ),
    ];
    for (text, needles) in cases {
        let file = s.file(text);
        let out = s.out();
        let trace = s.dir.join("trace");
        let trace_s = trace.to_string_lossy().into_owned();
        let r = s.run_program(
            "strace",
            &[
                "-f",
                "-qq",
                "-e",
                "trace=execve,unshare",
                "-o",
                &trace_s,
                BIN,
                "study",
                "run",
                &file,
                "-o",
                &out,
            ],
        );
        let t = std::fs::read_to_string(&trace).expect("the strace output");
        // `12345 execve("/…/wirebench", …`: the study's own PID, for the namespace check.
        let study_pid: u32 = t
            .lines()
            .find(|l| l.contains("execve(") && l.contains(BIN))
            .and_then(|l| l.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("strace saw no exec of the binary: {t}"));
        s.pids.push(study_pid);
        let built: Vec<&str> = t
            .lines()
            .filter(|l| l.contains("CLONE_NEWNET") || l.contains("/ip\""))
            .collect();
        assert!(built.is_empty(), "{text}: built {built:?}");
        assert_eq!(r.code, 2, "{text}\n{}", r.stderr);
        for n in needles {
            assert!(r.stderr.contains(n), "{text}: {n:?} not in {}", r.stderr);
        }
        assert!(r.stderr.contains(&file), "{}", r.stderr);
        assert!(
            !Path::new(&out).exists(),
            "something was written for {text}"
        );
        assert!(lab_namespaces(study_pid).is_empty());
    }
    // The dry run prints the plan and builds nothing.
    let file = s.file(TWO_BY_TWO);
    let r = s.run(&["study", "run", "--dry-run", &file, "-o", &s.out()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("2 cell(s), 1 test(s), 8 point(s) (2 round(s)"),
        "{}",
        r.stdout
    );
    assert!(!Path::new(&s.out()).exists());
}

const CHECKSUM_OFFLOAD: &str = r#"
title = "checksum offload vs the profile's checksum share"
[options]
time = 1.0
[testbed]
cc = "cubic"
[factors]
offload = ["tx-checksum=on", "tx-checksum=off"]
[[test]]
command = "stream"
args = ["-b", "1G", "--profile", "--profile-hz", "3989"]
"#;

/// Issue 17's ground truth for the profile: with the veth's transmit checksum offload off
/// (read back from the kernel as off), at the same paced rate, the sampled CPU time in the
/// checksum category (both ends' profiles) rises compared with offload on.
#[test]
fn checksum_offload_off_raises_the_checksum_category() {
    require_netns();
    let _g = serial();
    let mut s = Scratch::new("csum");
    let file = s.file(CHECKSUM_OFFLOAD);
    let fig = |p: &StudyPoint, f: FigureName| {
        p.figures
            .iter()
            .find(|x| x.figure == f)
            .map(|x| x.value)
            .unwrap_or_else(|| panic!("{f:?} missing: {:?}", p.figures))
    };
    // The comparison needs the same paced rate in both cells (within 5 %): on a machine
    // whose CPUs other work holds, the offload-off cell (more CPU per byte) can fall short
    // of it (1.23 of 2 Gbit/s once, beside two compilers). That run cannot test the claim;
    // the study runs again, up to 3 times.
    let mut attempt = 1;
    let (pts, on, off) = loop {
        let out = format!("{}-{attempt}", s.out());
        assert_eq!(s.run_to_end(&["study", "run", &file, "-o", &out]), Some(0));
        let dir = PathBuf::from(&out);
        let m = manifest(&dir);
        let pts = points(&dir);
        assert_eq!(pts.len(), 2);
        let (mut on, mut off) = (None, None);
        for (i, p) in pts.iter().enumerate() {
            let offload = level(p, StudyFactor::Testbed(TestbedFactor::Offload));
            // The kernel's own word for the cell's setting.
            let tb = m.cells[p.cell as usize].testbed.as_ref().unwrap();
            let state = tb
                .client
                .as_ref()
                .unwrap()
                .offloads
                .iter()
                .find(|o| o.feature == "tx-checksumming");
            match offload {
                FactorValue::Name(n) if n == "tx-checksum=off" => {
                    assert_eq!(state.map(|o| o.state.as_str()), Some("off"));
                    off = Some(i);
                }
                _ => {
                    assert_eq!(state.map(|o| o.state.as_str()), Some("on"));
                    on = Some(i);
                }
            }
        }
        let (on, off) = (on.unwrap(), off.unwrap());
        let (r_on, r_off) = (
            fig(&pts[on], FigureName::ThroughputBps),
            fig(&pts[off], FigureName::ThroughputBps),
        );
        if (r_on - r_off).abs() <= 0.05 * r_on {
            wirebench_sys::require::note_retry("study checksum: the same paced rate", attempt);
            break (pts, on, off);
        }
        assert!(attempt < 3, "{r_on} vs {r_off} bit/s at attempt {attempt}");
        eprintln!("attempt {attempt}: {r_on} vs {r_off} bit/s, not the same rate: again");
        attempt += 1;
    };
    let (on, off) = (&pts[on], &pts[off]);
    // Both ends' checksum shares, summed: the software checksum runs where the kernel needs
    // it (the sender's transmit, the receiver's verification of a packet that arrives
    // without one), and each end profiles the CPUs it may use (all of them here, unpinned)
    // over its own window. Which end's window holds more of it varies: over 6 runs on an
    // Intel Xeon VM, the client's share with the offload off was 0.18–1.11 %, the server's
    // 1.03–1.85 % (CI once gave the client 0.07 %).
    let csum = |p: &StudyPoint| {
        (
            fig(p, FigureName::ClientChecksumPct),
            fig(p, FigureName::ServerChecksumPct),
        )
    };
    let ((c_on, s_on), (c_off, s_off)) = (csum(on), csum(off));
    let (both_on, both_off) = (c_on + s_on, c_off + s_off);
    eprintln!(
        "checksum share of the profiled CPU time, client + server: offload on {c_on:.2} + \
         {s_on:.2} %, off {c_off:.2} + {s_off:.2} %"
    );
    // With the offload on, the kernel computes no checksum (0.00 % here). How much one costs
    // depends on the CPU: at 2 Gbit/s 1.73 % of the client's window on an AMD EPYC VM, 0.27 %
    // on an Intel Xeon VM; at the 1 Gbit/s here about half that. An end takes about 8 000 samples in the window (3989 Hz, 2 CPUs,
    // 1 s), so 0.1 points is about 8 samples: a rise of at least that, to at least twice the
    // offload-on share, is not sampling noise. The rate is a prime: at the default rate of the
    // time, 250 Hz, in step with this kernel's tick (CONFIG_HZ=250) and about 500 samples per
    // end, CI once found no checksum sample at either end with the offload off
    // (docs/PROFILE.md, "Rate").
    assert!(
        both_off >= both_on + 0.1 && both_off >= 2.0 * both_on,
        "offload on {both_on:.2} %, off {both_off:.2} % (client + server)"
    );
    for pid in s.pids.clone() {
        assert_nothing_left(pid);
    }
}

/// `study run --all --dry-run` plans every shipped study (each file parses and plans, with
/// its rounds) and builds nothing; `--all` with a studies directory without study files is
/// refused.
#[test]
fn all_dry_run_plans_every_shipped_study() {
    let _g = shared();
    let studies = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../studies");
    let shipped: Vec<String> = std::fs::read_dir(&studies)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    assert!(shipped.len() >= 6, "{shipped:?}");
    let s = Scratch::new("all");
    let out = s.out();
    let dir = studies.display().to_string();
    let r = Command::new(BIN)
        .args([
            "study",
            "run",
            "--all",
            "--dry-run",
            "--studies-dir",
            &dir,
            "-o",
            &out,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&r.stdout);
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    for f in &shipped {
        let stem = f.trim_end_matches(".toml");
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(stem))
            .unwrap_or_else(|| panic!("{stem} not in {text}"));
        assert!(line.contains("x 3 round(s)"), "{line}");
    }
    assert!(text.contains("total: "), "{text}");
    assert!(!Path::new(&out).exists(), "a dry run writes nothing");
    let empty = s.dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let r = Command::new(BIN)
        .args(["study", "run", "--all", "--studies-dir"])
        .arg(&empty)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("no *.toml study files"));
}
