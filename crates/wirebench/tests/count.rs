//! `stream -n/--bytes` and `-k/--blocks`: the test stops after a count of payload bytes per
//! direction, split over the flows, at both ends. Checked against the kernel's own byte
//! counts (TCP_INFO `bytes_received` of every receiving socket, read after EOF).

use crate::common::*;
use serde_json::Value;

/// Bytes a data connection carries besides the payload, client to server: the preamble
/// (`WBD1`, the 16-byte test token, the 4-byte flow id; docs/PROTOCOL.md).
const PREAMBLE_BYTES: u64 = 24;

/// The JSON result of `wirebench ARGS --json -i 0`, which must succeed.
fn run_json(args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["--json", "-i", "0"]);
    let r = wb(&a);
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    serde_json::from_str(&r.stdout).expect("one JSON document")
}

/// Flow `(id, dir, role, total_bytes, kernel bytes_received)` of every flow at both ends.
fn flows(run: &Value) -> Vec<(u64, String, String, u64, u64)> {
    let mut out = Vec::new();
    for host in ["client", "server"] {
        for f in run[host]["data"]["stream"]["flows"]
            .as_array()
            .expect("flows")
        {
            out.push((
                f["flow"].as_u64().unwrap(),
                f["dir"].as_str().unwrap().to_string(),
                f["role"].as_str().unwrap().to_string(),
                f["total_bytes"].as_u64().unwrap(),
                f["socket"]["tcp_info"]["bytes_received"].as_u64().unwrap(),
            ));
        }
    }
    out
}

/// Every direction of `run` moved exactly `n` bytes: senders wrote their shares (the count
/// split evenly in flow-id order, the first flows taking the remainder), receivers read
/// them, and each receiving socket's kernel count is the share plus what else the
/// connection carried towards it (the preamble client to server, and the FIN).
fn assert_exact(run: &Value, n: u64, flows_per_dir: u64) {
    assert_eq!(run["status"], "completed", "{run}");
    let all = flows(run);
    for dir in ["client_to_server", "server_to_client"] {
        let mine: Vec<_> = all.iter().filter(|f| f.1 == dir).collect();
        if mine.is_empty() {
            continue;
        }
        let mut ids: Vec<u64> = mine.iter().map(|f| f.0).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len() as u64, flows_per_dir, "{dir}");
        for (rank, id) in ids.iter().enumerate() {
            let share = n / flows_per_dir + u64::from((rank as u64) < n % flows_per_dir);
            for f in mine.iter().filter(|f| f.0 == *id) {
                assert_eq!(f.3, share, "{dir} flow {id} {}", f.2);
                if f.2 == "receiver" {
                    let extra = if dir == "client_to_server" {
                        PREAMBLE_BYTES
                    } else {
                        0
                    };
                    assert_eq!(
                        f.4,
                        share + extra + 1,
                        "{dir} flow {id}: kernel bytes_received"
                    );
                }
            }
        }
        let d = run["summary"]["workload"]["stream"]["directions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["dir"] == dir)
            .expect("direction summary");
        assert_eq!(d["receiver_total_bytes"].as_u64(), Some(n), "{d}");
        assert_eq!(d["sender_total_bytes"].as_u64(), Some(n), "{d}");
    }
}

/// The receivers' window of `run`'s first direction, seconds: the first byte to the last
/// (a run of a few ms may have no CPU window: /proc/stat counts 10 ms ticks).
fn window_s(run: &Value) -> f64 {
    let d = &run["summary"]["workload"]["stream"]["directions"][0];
    d["receiver_window_ns"]
        .as_u64()
        .expect("receiver_window_ns") as f64
        / 1e9
}

#[test]
fn bytes_count_is_exact_in_both_directions_over_uneven_flows() {
    let _g = serial();
    let d = run_json(&["stream", "-n", "10000001", "-P", "3", "--bidir"]);
    let run = &d["runs"][0];
    assert_exact(run, 10_000_001, 3);
    // It stopped by itself, long before the 300 s bound.
    assert!(window_s(run) < 60.0, "{}", window_s(run));
    assert!(d["runs"][0]["summary"]["warnings"]
        .as_array()
        .is_none_or(|w| !w.iter().any(|w| w.to_string().contains("stop_count"))));
}

#[test]
fn blocks_count_reverse_and_on_the_epoll_engine() {
    let _g = serial();
    // -k 40 -l 64K: 40 calls of 64 KiB per direction, over 40 flows (above 32: epoll).
    let d = run_json(&["stream", "-k", "40", "-l", "64K", "-P", "40", "-R"]);
    let run = &d["runs"][0];
    assert_exact(run, 40 * 65_536, 40);
    let engine = run["client"]["engine"].to_string();
    assert!(engine.contains("epoll"), "{engine}");
}

#[test]
fn bytes_count_on_the_io_uring_and_sendfile_paths() {
    let _g = serial();
    for path in ["uring", "sendfile", "zerocopy"] {
        let d = run_json(&["stream", "-n", "7M", "-P", "2", "--send-path", path]);
        assert_exact(&d["runs"][0], 7 << 20, 2);
    }
}

/// Paced at 8 Mbit/s, 1 MB takes about 1 s: the window is the time to send the count, not
/// the duration bound.
#[test]
fn a_paced_count_takes_the_time_its_rate_says() {
    let _g = link_bound();
    let d = run_json(&["stream", "-n", "1000000", "-b", "8M", "-t", "60"]);
    let run = &d["runs"][0];
    assert_exact(run, 1_000_000, 1);
    let w = window_s(run);
    // 8e6 bits at 8e6 bit/s: 1.0 s. Below: at most the pacer's first chunk goes early (20 %).
    // Above: a busy host delays each of the pacer's wake-ups by milliseconds, not the whole
    // count by a second; a pacer at half its rate (2.0 s) fails.
    assert!((0.8..1.8).contains(&w), "window {w} s");
}

#[test]
fn a_count_cut_short_by_the_bound_says_so() {
    let _g = serial();
    let r = wb(&["stream", "-n", "1000G", "-t", "0.5", "-i", "0"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("warning: forward: the receivers read") && r.stdout.contains("(-n/-k)"),
        "{}",
        r.stdout
    );
    let d = run_json(&["stream", "-n", "1000G", "-t", "0.5"]);
    let w = d["runs"][0]["summary"]["warnings"].to_string();
    assert!(w.contains("stop_count_not_reached"), "{w}");
}

#[test]
fn counts_that_cannot_work_are_refused_naming_the_flag() {
    let _g = serial();
    let r = wb(&["stream", "-n", "1M", "--warmup", "1"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("-n/--bytes") && r.stderr.contains("warm-up"),
        "{}",
        r.stderr
    );
    let r = wb(&["stream", "-n", "2", "-P", "3"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("-n/--bytes"), "{}", r.stderr);
    let r = wb(&["stream", "-n", "1M", "-k", "3"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}
