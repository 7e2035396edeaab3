//! The results history end to end: saving by default (and where), a database that cannot
//! take the result never costing it, concurrent savers, `history` list/show/export/delete/
//! prune/import, `compare` on files and `history regress`'s exit codes.
//!
//! Every command here names its database (`--db` in a temporary directory, or
//! `XDG_DATA_HOME`/`HOME` pointed at one), so nothing is written to the real home.

use crate::common;
use std::path::Path;
use std::process::Command;

use crate::common::{finish, Ran, BIN};
use serde_json::Value;

struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "wb-history-{tag}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn wb_db(db: &Path, args: &[&str]) -> Ran {
    let mut c = Command::new(BIN);
    c.args(args).arg("--db").arg(db);
    finish(c)
}

fn list(db: &Path) -> Vec<Value> {
    let r = wb_db(db, &["history", "list", "--json", "--limit", "0"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    serde_json::from_str::<Vec<Value>>(&r.stdout).unwrap()
}

/// A short loopback test (embedded server), JSON on stdout.
const SHORT: [&str; 4] = ["stream", "-t", "0.3", "--json"];

fn short_test(extra: &[&str], env: &[(&str, &Path)], remove: &[&str]) -> Ran {
    let mut c = Command::new(BIN);
    c.args(SHORT).args(extra);
    for (k, v) in env {
        c.env(k, v);
    }
    for k in remove {
        c.env_remove(k);
    }
    finish(c)
}

#[test]
fn a_test_is_saved_with_its_title_and_tags() {
    let _g = common::shared();
    let dir = TempDir::new("save");
    let db = dir.0.join("h.db");
    let db_s = db.to_str().unwrap();
    let r = short_test(
        &[
            "--db",
            db_s,
            "-T",
            "baseline run",
            "--tag",
            "kernel=6.12",
            "--tag",
            "host=a",
        ],
        &[],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let printed = r.json();
    let rows = list(&db);
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row["title"], "baseline run");
    assert_eq!(row["tags"]["kernel"], "6.12");
    assert_eq!(row["workload"], "stream");
    // The stored headline is the printed result's receiver throughput.
    let stream = printed.runs[0].summary.as_ref().unwrap().stream().unwrap();
    let bps: f64 = stream
        .directions
        .iter()
        .map(|d| d.receiver_throughput_bps)
        .sum();
    assert!((row["throughput_bps"].as_f64().unwrap() - bps).abs() <= 1e-6 * bps);
    // `show --json` gives back the document that was printed.
    let id = row["id"].as_i64().unwrap().to_string();
    let shown = wb_db(&db, &["history", "show", &id, "--json"]);
    let back: Value = serde_json::from_str(&shown.stdout).unwrap();
    let printed_v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(back, printed_v);
    // --no-save leaves it alone.
    let r = short_test(&["--no-save"], &[("XDG_DATA_HOME", &dir.0)], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!dir.0.join("wirebench").exists());
}

#[test]
fn the_default_database_follows_xdg_then_home() {
    let _g = common::shared();
    let xdg = TempDir::new("xdg");
    let r = short_test(&[], &[("XDG_DATA_HOME", &xdg.0)], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(list(&xdg.0.join("wirebench/history.db")).len(), 1);
    let home = TempDir::new("home");
    let r = short_test(&[], &[("HOME", &home.0)], &["XDG_DATA_HOME"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        list(&home.0.join(".local/share/wirebench/history.db")).len(),
        1
    );
}

#[test]
fn a_corrupt_or_unwritable_database_keeps_the_result() {
    let _g = common::shared();
    let dir = TempDir::new("bad");
    let corrupt = dir.0.join("corrupt.db");
    std::fs::write(&corrupt, vec![0x42u8; 4096]).unwrap();
    let plain = dir.0.join("plain-file");
    std::fs::write(&plain, b"x").unwrap();
    // Root may write anywhere its permission bits allow, so the unwritable place is a path
    // through a regular file (ENOTDIR), which stops every user.
    let unwritable = plain.join("history.db");
    for db in [&corrupt, &unwritable] {
        let out = dir.0.join("out.json");
        let _ = std::fs::remove_file(&out);
        let r = short_test(
            &["--db", db.to_str().unwrap(), "-o", out.to_str().unwrap()],
            &[],
            &[],
        );
        assert_eq!(
            r.code, 0,
            "a database problem is not a failed test: {}",
            r.stderr
        );
        let printed = r.json();
        assert!(!printed.runs.is_empty());
        let written = std::fs::read_to_string(&out).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&written).unwrap(),
            serde_json::from_str::<Value>(&r.stdout).unwrap()
        );
        assert!(
            r.stderr.contains("not saved") && r.stderr.contains(db.to_str().unwrap()),
            "the warning names the database: {}",
            r.stderr
        );
    }
    assert_eq!(
        std::fs::read(&corrupt).unwrap(),
        vec![0x42u8; 4096],
        "left as found"
    );
}

#[test]
fn two_clients_saving_at_once_both_succeed() {
    let _g = common::shared();
    let dir = TempDir::new("two");
    let db = dir.0.join("h.db");
    let spawn = || {
        Command::new(BIN)
            .args(["rr", "-t", "0.3", "--json", "--db"])
            .arg(&db)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (spawn(), spawn());
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    assert_eq!(list(&db).len(), 2);
}

/// Copies of a real result whose receiver throughput is scaled by `factor` and by a small
/// deterministic spread (±1 %, five values): the ground truth of the comparison is the
/// factor written here.
fn variants(dir: &Path, base: &Value, name: &str, factor: f64) -> Vec<String> {
    [0.99, 1.0, 1.01, 0.995, 1.005]
        .iter()
        .enumerate()
        .map(|(i, jitter)| {
            let mut v = base.clone();
            for run in v["runs"].as_array_mut().unwrap() {
                for d in run["summary"]["workload"]["stream"]["directions"]
                    .as_array_mut()
                    .unwrap()
                {
                    let x = d["receiver_throughput_bps"].as_f64().unwrap();
                    d["receiver_throughput_bps"] = Value::from(x * factor * jitter);
                }
            }
            let path = dir.join(format!("{name}{i}.json"));
            std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
            path.to_str().unwrap().to_string()
        })
        .collect()
}

fn throughput_figure(stdout: &str) -> Value {
    let doc: Value = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    doc["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "throughput")
        .cloned()
        .expect("a throughput figure")
}

#[test]
fn compare_files_and_regress_exit_codes() {
    let _g = common::shared();
    let dir = TempDir::new("cmp");
    let r = short_test(&["--no-save"], &[], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let base: Value = serde_json::from_str(&r.stdout).unwrap();
    let a = variants(&dir.0, &base, "a", 1.0);
    let same = variants(&dir.0, &base, "same", 1.0);
    let slow = variants(&dir.0, &base, "slow", 0.9);

    // Files, no database: 10 % slower is found, with the interval around −10 %.
    let mut args: Vec<&str> = vec!["compare", "--json"];
    args.extend(a.iter().map(String::as_str));
    args.push("vs");
    args.extend(slow.iter().map(String::as_str));
    let c = common::wb(&args);
    assert_eq!(c.code, 0, "{}", c.stderr);
    let f = throughput_figure(&c.stdout);
    assert_eq!(f["significant"], true, "{f}");
    assert_eq!(f["test"], "welch");
    let change = f["change_pct"].as_f64().unwrap();
    assert!((change + 10.0).abs() < 1.5, "{change}");
    assert!(f["ci_low_pct"].as_f64().unwrap() < -10.0 + 1.5);
    assert!(f["ci_high_pct"].as_f64().unwrap() > -10.0 - 1.5);
    // Words for people.
    let mut args: Vec<&str> = vec!["compare"];
    args.extend(a.iter().map(String::as_str));
    args.push("vs");
    args.extend(same.iter().map(String::as_str));
    let c = common::wb(&args);
    assert!(
        c.stdout.contains("no significant difference"),
        "{}",
        c.stdout
    );

    // The same files imported with tags, judged by `history regress`.
    let db = dir.0.join("h.db");
    for (files, tag) in [
        (&a, "build=a"),
        (&same, "build=same"),
        (&slow, "build=slow"),
    ] {
        let mut args: Vec<&str> = vec!["history", "import", "--tag", tag];
        args.extend(files.iter().map(String::as_str));
        let r = wb_db(&db, &args);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    assert_eq!(list(&db).len(), 15);
    let regress = |cand: &str, threshold: &str| {
        wb_db(
            &db,
            &[
                "history",
                "regress",
                "--baseline",
                "build=a",
                "--candidate",
                cand,
                "--threshold",
                threshold,
            ],
        )
    };
    let r = regress("build=slow", "5");
    assert_eq!(
        r.code, 1,
        "a 10 % drop beyond 5 %: {}{}",
        r.stdout, r.stderr
    );
    assert!(r.stdout.contains("REGRESSION"), "{}", r.stdout);
    assert_eq!(
        regress("build=slow", "15").code,
        0,
        "within a 15 % threshold"
    );
    assert_eq!(regress("build=same", "0").code, 0, "no change");
    assert_eq!(regress("build=nothing", "0").code, 2, "nothing to judge");
    // Without --candidate: the newest result outside the baseline (the last slow import).
    let r = wb_db(&db, &["history", "regress", "--baseline", "build=a"]);
    // One candidate run of 0.3 s has no interval samples: too few to test, which is not a
    // regression (exit 0), and the evidence says so.
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("not tested"), "{}", r.stdout);
}

/// `serve --db`: the daemon saves each test's record to the history as a result marked
/// `daemon`; what it stores is the test the client printed (the same receiver byte count,
/// the same throughput) and the same record the records file holds. A database the daemon
/// cannot open stops it at start, naming the database.
#[test]
fn the_daemon_saves_its_records_to_a_database() {
    let _g = common::shared();
    let dir = TempDir::new("serve-db");
    let db = dir.0.join("daemon.db");
    let db_s = db.to_str().unwrap();
    let mut d = common::daemon::LocalDaemon::start(&["--db", db_s]);
    let port = d.addr.port().to_string();
    let mut printed = Vec::new();
    for workload in [&["stream", "-t", "0.3"][..], &["rr", "-t", "0.3"][..]] {
        let mut c = Command::new(BIN);
        c.args(workload)
            .args(["-H", "127.0.0.1", "-p", &port, "--json", "--no-save"]);
        let r = finish(c);
        assert_eq!(r.code, 0, "{}", r.stderr);
        printed.push(r.json());
    }
    // Every record is queued before the daemon's shutdown returns and saved before it exits.
    let records = d.stop_and_final_records(std::time::Duration::from_secs(30));
    assert_eq!(records.len(), 2, "{}", d.log_text());
    let rows = list(&db);
    assert_eq!(rows.len(), 2, "{rows:?}\n{}", d.log_text());
    // Newest first: the rr test, then the stream test.
    assert_eq!(rows[0]["workload"], "rr");
    assert_eq!(rows[1]["workload"], "stream");
    for row in &rows {
        assert_eq!(row["source"], "daemon", "{row}");
        assert_eq!(row["status"], "completed", "{row}");
    }
    // The stream test: the stored document's receiver read what the client printed.
    let id = rows[1]["id"].as_i64().unwrap().to_string();
    let shown = wb_db(&db, &["history", "show", &id, "--json"]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let stored = shown.json();
    let dir_of = |r: &wirebench_model::result::RunResult| {
        r.runs[0]
            .summary
            .as_ref()
            .unwrap()
            .stream()
            .unwrap()
            .directions[0]
            .clone()
    };
    let (got, want) = (dir_of(&stored), dir_of(&printed[0]));
    assert!(want.receiver_bytes > 0);
    assert_eq!(got.receiver_bytes, want.receiver_bytes);
    let bps = rows[1]["throughput_bps"].as_f64().unwrap();
    assert!(
        (bps - want.receiver_throughput_bps).abs() <= 1e-6 * want.receiver_throughput_bps,
        "stored {bps}, printed {}",
        want.receiver_throughput_bps
    );
    // The stored result started when the daemon admitted the test the records file holds.
    assert_eq!(
        Some(stored.started_unix_ms),
        records[0]["admitted_unix_ms"].as_u64()
    );
    // The rr test's transactions per second, stored as the client printed them.
    let tps = rows[0]["transactions_per_s"].as_f64().unwrap();
    let want = match &printed[1].runs[0].summary.as_ref().unwrap().workload {
        wirebench_model::result::WorkloadSummary::Rr(r) => r.transactions_per_s,
        other => panic!("not rr: {other:?}"),
    };
    assert!(
        want > 0.0 && (tps - want).abs() <= 1e-6 * want,
        "{tps} vs {want}"
    );

    // A database it cannot open: the daemon does not start, and says which and why.
    let mut c = Command::new(BIN);
    c.args(["serve", "--port", "0", "--db"]).arg(&dir.0);
    let r = finish(c);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("opening the history database")
            && r.stderr.contains(dir.0.to_str().unwrap()),
        "{}",
        r.stderr
    );
}

/// `report --compare`: the page judges the figures as `compare` does (a 10 % drop is found
/// and called worse; equal sets are not) and draws both sides: the interval series of A's
/// and B's runs overlaid on one time axis, and both sides' values as boxes.
#[test]
fn report_compare_draws_both_sides_and_judges_them() {
    let _g = common::shared();
    let dir = TempDir::new("report-cmp");
    let mut c = Command::new(BIN);
    c.args(["stream", "-t", "1", "-i", "0.25", "--json", "--no-save"]);
    let r = finish(c);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let base: Value = serde_json::from_str(&r.stdout).unwrap();
    let a = variants(&dir.0, &base, "a", 1.0);
    let slow = variants(&dir.0, &base, "slow", 0.9);
    let same = variants(&dir.0, &base, "same", 1.0);
    let page = |b: &[String], name: &str| -> String {
        let out = dir.0.join(name);
        let mut args: Vec<&str> = vec!["report", "-o", out.to_str().unwrap(), "--compare"];
        args.extend(a.iter().map(String::as_str));
        args.push("vs");
        args.extend(b.iter().map(String::as_str));
        let r = common::wb(&args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        std::fs::read_to_string(out).unwrap()
    };
    let html = page(&slow, "slow.html");
    assert!(
        html.contains("B differs significantly: throughput -10."),
        "headline"
    );
    // The time series: every run of both sides is a line (5 results a side, one run each).
    assert!(html.contains("throughput per interval, A and B"));
    for side in ["A", "B"] {
        for i in 1..=5 {
            assert!(
                html.contains(&format!("{side} result {i} run 1")),
                "{side} result {i} not drawn"
            );
        }
    }
    assert!(html.contains("throughput: A and B"), "the boxes");
    // The results compared are listed with the command that ran them.
    assert!(html.contains("The results compared"));
    let html = page(&same, "same.html");
    assert!(!html.contains("B differs significantly"));
    assert!(html.contains("no significant difference"));
    // A report needs its input or --compare, and --compare two sides.
    let r = common::wb(&["report", "-o", "/dev/null"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let r = common::wb(&["report", "-o", "/dev/null", "--compare", &a[0], "vs"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}
