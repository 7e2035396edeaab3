//! The client's output choices, end to end with the real binary: newline-delimited JSON, a
//! forced rate unit, the many-flow summary, and `-o` checked before the test and writing
//! the format asked for.

mod common;

use std::time::{Duration, Instant};

use common::*;
use wirebench_model::result::{RunResult, RunStatus};

/// `--json-stream`: every stdout line is one JSON object; interval events come first (from
/// both ends), the result last; the receiving end's interval bytes add up to at most what
/// the result says it read over the whole test.
#[test]
fn json_stream_is_one_object_per_line() {
    let _g = serial();
    let r = wb(&["stream", "-t", "2", "--json-stream"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines: Vec<serde_json::Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let (last, intervals) = lines.split_last().expect("lines");
    assert_eq!(last["event"], "result");
    let result: RunResult = serde_json::from_value(last["result"].clone()).unwrap();
    assert_eq!(result.status, RunStatus::Completed);
    assert!(intervals.len() >= 2, "{} interval lines", intervals.len());
    let mut server_bytes = 0u64;
    for i in intervals {
        assert_eq!(i["event"], "interval");
        if i["host"] == "server" {
            for f in i["sample"]["stream"]["flows"].as_array().unwrap() {
                server_bytes += f["bytes"].as_u64().unwrap();
            }
        }
    }
    let read = result.runs[0]
        .server
        .as_ref()
        .unwrap()
        .stream()
        .unwrap()
        .flows[0]
        .total_bytes;
    assert!(
        server_bytes > 0 && server_bytes <= read,
        "{server_bytes} of {read}"
    );
}

/// `-f m` prints every rate of the table in Mbit/s; `-f G` in GB/s.
#[test]
fn forced_rate_units() {
    let _g = serial();
    let r = wb(&["stream", "-t", "0.5", "-f", "m"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("recv Mbit/s"), "{}", r.stdout);
    let r = wb(&["stream", "-t", "0.5", "-f", "G"]);
    assert!(r.stdout.contains("recv GB/s"), "{}", r.stdout);
    let r = wb(&["stream", "-t", "0.5", "-f", "x"]);
    assert_eq!(r.code, 2);
}

/// Above 16 flows a direction the table shows the 5 slowest (said so), `--per-flow` every
/// flow; the total row is there either way.
#[test]
fn many_flows_are_summarised_unless_asked() {
    let _g = serial();
    let rows = |out: &str| {
        out.lines()
            .filter(|l| {
                let t = l.trim_start();
                t.split_whitespace()
                    .next()
                    .is_some_and(|w| w.parse::<u32>().is_ok())
                    && t.contains("forward")
            })
            .count()
    };
    let r = wb(&["stream", "-t", "0.5", "-P", "20", "-l", "64K"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("(20 flows forward: the 5 slowest; --per-flow shows every flow)"),
        "{}",
        r.stdout
    );
    assert_eq!(rows(&r.stdout), 5, "{}", r.stdout);
    assert!(r.stdout.contains("total forward"));
    let r = wb(&["stream", "-t", "0.5", "-P", "20", "-l", "64K", "--per-flow"]);
    assert_eq!(rows(&r.stdout), 20, "{}", r.stdout);
}

/// `-o` into a directory that does not exist fails at once, before any test runs, naming
/// the flag; `--csv -o FILE` writes CSV there (and stdout gets it too); `-o -` is stdout.
#[test]
fn output_is_checked_first_and_written_in_the_format_asked() {
    let _g = serial();
    let t = Instant::now();
    let r = wb(&["stream", "-t", "5", "-o", "/nonexistent-wb-dir/r.json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(
        r.stderr.contains("-o /nonexistent-wb-dir/r.json"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);

    let path = std::env::temp_dir().join(format!("wb-cli-{}.csv", std::process::id()));
    let p = path.to_str().unwrap();
    let r = wb(&["stream", "-t", "0.3", "--csv", "-o", p]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let file = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(
        file.starts_with("started_utc,run,status,workload,direction,"),
        "{file}"
    );
    assert_eq!(file.lines().count(), 2, "{file}");
    assert_eq!(r.stdout, file);

    let r = wb(&["stream", "-t", "0.3", "--json", "-o", "-"]);
    assert_eq!(r.code, 0);
    assert!(RunResult::from_json(&r.stdout).is_ok());
}

/// `--csv --intervals`: a row per interval with the same columns; `--csv --per-flow` (here
/// through `-o`): a row per flow, each with its receiver bytes.
#[test]
fn csv_time_series_and_flows() {
    let _g = serial();
    let r = wb(&["stream", "-t", "1", "-i", "0.25", "--csv", "--intervals"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut lines = r.stdout.lines();
    let width = lines.next().unwrap().split(',').count();
    let rows: Vec<&str> = lines.collect();
    assert!(rows.len() >= 4, "{}", r.stdout);
    assert!(rows.iter().all(|l| l.split(',').count() == width));

    let path = std::env::temp_dir().join(format!("wb-cli-{}.csv", std::process::id()));
    let r = wb(&[
        "stream",
        "-t",
        "0.5",
        "-P",
        "3",
        "--csv",
        "--per-flow",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let csv = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "receiver_bytes").unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 3, "{csv}");
    assert!(
        rows.iter().all(|r| r[col].parse::<u64>().unwrap() > 0),
        "{csv}"
    );
}

/// On a terminal (a pseudo-terminal from util-linux's `script`), a command without live
/// lines shows a progress bar (a test with `-i 0`, a sweep); piped, it shows none.
#[test]
fn progress_bars_on_a_terminal_only() {
    let _g = serial();
    let tty = |cmd: &str| -> String {
        let log = std::env::temp_dir().join(format!("wb-tty-{}.log", std::process::id()));
        let st = std::process::Command::new("script")
            .args(["-qfc", &format!("{BIN} {cmd}"), &log.display().to_string()])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status()
            .expect("util-linux script");
        assert!(st.success(), "{cmd}");
        let out = String::from_utf8_lossy(&std::fs::read(&log).unwrap()).into_owned();
        let _ = std::fs::remove_file(&log);
        out
    };
    let out = tty("stream -t 3.5 -i 0");
    assert!(
        out.contains("measuring: ") && out.contains("of about 4 s"),
        "{out}"
    );
    let out = tty("sweep stream --msg-size 1K,2K,4K --perturb 0 --no-remeasure -t 1.2");
    assert!(out.contains("points,") && out.contains("ETA"), "{out}");
    let piped = wb(&["stream", "-t", "3.5", "-i", "0"]);
    assert_eq!(piped.code, 0);
    assert!(!piped.stdout.contains("measuring") && !piped.stderr.contains("measuring"));
}
