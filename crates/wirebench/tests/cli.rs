//! The client's output choices, end to end with the real binary: newline-delimited JSON, a
//! forced rate unit, the many-flow summary, and `-o` checked before the test and writing
//! the format asked for.

use crate::common;
use std::time::{Duration, Instant};

use crate::common::*;
use wirebench_model::result::{RunResult, RunStatus};

/// `--json-stream`: every stdout line is one JSON object; interval events come first (from
/// both ends), the result last; the receiving end's interval bytes add up to at most what
/// the result says it read over the whole test.
#[test]
fn json_stream_is_one_object_per_line() {
    let _g = shared();
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
    let _g = shared();
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
    let _g = shared();
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
    let _g = shared_timed();
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
    let _g = shared();
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
    let _g = shared();
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
    // Paced (-b): what is checked is the bar, not the rate, and unpaced runs would keep
    // both CPUs busy beside the other tests.
    let out = tty("stream -t 3.5 -i 0 -b 200M");
    assert!(
        out.contains("measuring: ") && out.contains("of about 4 s"),
        "{out}"
    );
    let out = tty("sweep stream --msg-size 1K,2K,4K --perturb 0 --no-remeasure -t 1.2 -b 200M");
    assert!(out.contains("points,") && out.contains("ETA"), "{out}");
    let piped = wb(&["stream", "-t", "3.5", "-i", "0", "-b", "200M"]);
    assert_eq!(piped.code, 0);
    assert!(!piped.stdout.contains("measuring") && !piped.stderr.contains("measuring"));
}

/// iperf3's habits: `-c HOST` is -H and `-J` is --json (both reach the daemon on loopback and
/// return a completed JSON result); `-s` and `-u` are refused with the subcommand to use; a
/// negative number is refused with a message naming its flag. All exit 2 except the accepted
/// aliases.
#[test]
fn iperf3_habits() {
    let _g = shared();
    let d = common::daemon::LocalDaemon::start(&[]);
    let port = d.addr.port().to_string();
    let r = wb(&["stream", "-c", "127.0.0.1", "-p", &port, "-t", "0.3", "-J"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let res = r.json();
    assert_eq!(res.status, RunStatus::Completed);
    assert!(
        r.stdout.contains(&format!("127.0.0.1:{port}")),
        "the result names the daemon -c gave: {}",
        r.stdout
    );
    for (args, needle) in [
        (&["-s"][..], "`wirebench serve`"),
        (&["stream", "-s"][..], "`wirebench serve`"),
        (&["stream", "-u", "-t", "1"][..], "`wirebench udp`"),
        (&["-c", "127.0.0.1", "-u"][..], "`wirebench udp`"),
        (&["-c", "127.0.0.1"][..], "`wirebench stream -c HOST`"),
    ] {
        let r = wb(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.stderr);
    }
    for (args, flag) in [
        (&["stream", "-t", "-1"][..], "--duration"),
        (&["rr", "-P", "-2"][..], "--flows"),
        (&["udp", "-i", "-1"][..], "--interval"),
        (&["crr", "--warmup", "-1"][..], "--warmup"),
    ] {
        let r = wb(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(flag), "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {}", r.stderr);
    }
}

/// Parameters refused by the client (-t beyond 3600 s) or by the server (-P above its
/// --max-flows, -t above its --max-duration) exit 2 (invalid parameters), a path that could
/// not be tested exits 1.
#[test]
fn refused_parameters_exit_2() {
    let _g = shared();
    let d = common::daemon::LocalDaemon::start(&["--max-flows", "8", "--max-duration", "5"]);
    let port = d.addr.port().to_string();
    let client = |extra: &[&str]| {
        let mut a = vec!["stream", "-H", "127.0.0.1", "-p", &port];
        a.extend_from_slice(extra);
        wb(&a)
    };
    for (extra, needle) in [
        (&["-P", "200", "-t", "1"][..], "flows"),
        (&["-t", "7200"][..], "duration"),
        (&["-t", "10"][..], "duration"),
    ] {
        let r = client(extra);
        assert_eq!(r.code, 2, "{extra:?}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{extra:?}: {}", r.stderr);
    }
    let r = wb(&["stream", "-t", "0.3", "-C", "nosuchcc"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("nosuchcc"), "{}", r.stderr);
    // Nothing listens on port 1: the test could not run.
    let r = wb(&["stream", "-H", "127.0.0.1", "-p", "1", "-t", "1"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
}

/// An HTTP server at the port is named as such (it answers the handshake with
/// "HTTP/1.1 400 ..."), and the client exits 1.
#[test]
fn http_server_is_named() {
    let _shared = crate::common::shared();
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().unwrap().port().to_string();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = [0u8; 64];
        let _ = s.read(&mut buf);
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        // Keep the connection open until the client gives up, as a keep-alive server does.
        let _ = s.read(&mut buf);
    });
    let r = wb(&["stream", "-H", "127.0.0.1", "-p", &port, "-t", "1"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("an HTTP server answered"), "{}", r.stderr);
    server.join().expect("server thread");
}

/// The default human output is a first look: the table, a CPU line per end, the verdict in
/// a line or two and the warnings, in at most 24 lines for a one-flow stream (4 of header,
/// a blank, 3 of table, 2 of legend, 2 of CPU, 1 of congestion control, 2 of verdict and up
/// to 3 warnings of 2 lines); `-v` adds the details; `-q` is one line per direction or test;
/// `-v -q` is refused.
#[test]
fn default_verbose_and_quiet_output() {
    let _g = shared();
    let r = wb(&["stream", "-t", "0.5"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = &r.stdout;
    assert!(out.contains("total forward"), "{out}");
    assert!(out.contains("verdict: limited by "), "{out}");
    assert!(
        out.contains("client CPU: ") && out.contains("server CPU: "),
        "{out}"
    );
    assert!(
        out.lines().count() <= 24,
        "{} lines:\n{out}",
        out.lines().count()
    );
    for detail in [
        "effective socket buffers",
        "evidence:",
        "unaccounted",
        "rates: bit/s",
    ] {
        assert!(
            !out.contains(detail),
            "{detail} in the default output:\n{out}"
        );
    }

    let r = wb(&["stream", "-t", "0.5", "-v"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for detail in [
        "total forward",
        "effective socket buffers",
        "service demand   ",
        "wirebench threads",
        "evidence:",
        "unaccounted",
        "rates: bit/s of TCP payload",
    ] {
        assert!(
            r.stdout.contains(detail),
            "no {detail} with -v:\n{}",
            r.stdout
        );
    }

    let quiet = |args: &[&str], starts: &[&str]| {
        let r = wb(args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert_eq!(lines.len(), starts.len(), "{args:?}:\n{}", r.stdout);
        for (l, s) in lines.iter().zip(starts) {
            assert!(l.starts_with(s), "{args:?}: {l}");
        }
    };
    quiet(
        &["stream", "-t", "0.5", "-q"],
        &["stream forward: receiver "],
    );
    quiet(
        &["stream", "-t", "0.5", "--bidir", "--quiet"],
        &["stream forward: receiver ", "stream reverse: receiver "],
    );
    quiet(&["rr", "-t", "0.5", "-q"], &["TCP RR: "]);
    quiet(&["crr", "-t", "0.5", "-q"], &["TCP CRR: "]);
    quiet(&["udp", "-t", "0.5", "-q"], &["udp forward: receiver "]);

    let r = wb(&["stream", "-t", "0.5", "-v", "-q"]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
}

/// Live stream lines carry the sender's retransmits and congestion window of the interval
/// (`Retr`, `Cwnd`), the same figures as the result's TCP_INFO rows of that interval
/// (`tcp_intervals`, the direction's row), and with `--per-flow` a line per flow.
#[test]
fn live_lines_carry_the_senders_retransmits_and_cwnd() {
    let _g = shared();
    let path = std::env::temp_dir().join(format!("wb-cli-live-{}.json", std::process::id()));
    let p = path.to_str().unwrap();
    let r = wb(&["stream", "-t", "1", "-i", "0.25", "-o", p]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let res = RunResult::from_json(&doc).unwrap();
    let s = res.runs[0].summary.as_ref().unwrap().stream().unwrap();
    let rows: Vec<_> = s
        .tcp_intervals
        .iter()
        .filter(|t| t.flow.is_none())
        .collect();
    let live: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.starts_with('[') && l.contains(" recv forward "))
        .collect();
    assert!(live.len() >= 3, "{}", r.stdout);
    assert!(
        r.stdout.contains("Retr, Cwnd: the sending end's TCP_INFO"),
        "{}",
        r.stdout
    );
    let mut joined = 0;
    for (k, l) in live.iter().enumerate() {
        let (_, tail) = l
            .split_once("  Retr ")
            .unwrap_or_else(|| panic!("no Retr: {l}"));
        let (retr, cwnd) = tail.split_once("  Cwnd ").unwrap_or_else(|| panic!("{l}"));
        let (retr, cwnd) = (retr.trim(), cwnd.trim());
        if retr == "-" {
            continue;
        }
        joined += 1;
        let row = rows
            .get(k)
            .unwrap_or_else(|| panic!("no TCP_INFO row {k}: {rows:?}"));
        assert!(row.cwnd_bytes > 0, "{row:?}");
        assert_eq!(retr, row.retransmits.to_string(), "{l} vs {row:?}");
        assert_eq!(
            cwnd,
            wirebench_report::print::units::bytes(row.cwnd_bytes),
            "{l} vs {row:?}"
        );
    }
    // A sender's sample comes at most an interval late on loopback, and only the last line
    // may end the run without it.
    assert!(joined + 1 >= live.len(), "{}", r.stdout);

    let r = wb(&["stream", "-t", "0.5", "-i", "0.25", "-P", "2", "--per-flow"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let flow_lines = r
        .stdout
        .lines()
        .filter(|l| l.starts_with('[') && l.contains("  flow ") && l.contains("  Retr "))
        .count();
    let dir_lines = r
        .stdout
        .lines()
        .filter(|l| l.starts_with('[') && l.contains(" recv forward "))
        .count();
    assert!(dir_lines >= 1, "{}", r.stdout);
    assert_eq!(flow_lines, 2 * dir_lines, "{}", r.stdout);
}
