//! The senders' TCP_INFO per interval and the round-trip histogram against independent
//! ground truth: the sending namespace's own retransmission counter (`/proc/net/snmp`
//! `Tcp: RetransSegs`, which counts only that namespace's sockets), the throughput the
//! receiver measured, an emulated delay measured by a plain ping-pong written here, and the
//! transaction count.

use std::time::Duration;

use crate::common::*;
use wirebench_lab::emu::{EmuConfig, EmulatedPath};
use wirebench_lab::{Side, ADDR_B};
use wirebench_model::result::{RunResult, StreamSummary};
use wirebench_model::tcp_series::TcpIntervalRow;

fn stream_sum(r: &RunResult) -> &StreamSummary {
    r.runs[0]
        .summary
        .as_ref()
        .and_then(|s| s.stream())
        .expect("a stream summary")
}

/// A daemon in the path's side B, listening on its address; it and its port.
fn serve_on(path: &EmulatedPath) -> (daemon::LocalDaemon, String) {
    let mut c = path.command(Side::B, BIN);
    c.args(["serve", "--bind", ADDR_B, "--allow-unauthenticated"]);
    let d = daemon::LocalDaemon::start_cmd(c, &["--port", "0"]);
    let port = d.addr.port().to_string();
    (d, port)
}

/// The rows of all flows (the direction's) inside the measurement window.
fn window_rows(s: &StreamSummary) -> Vec<&TcpIntervalRow> {
    s.tcp_intervals
        .iter()
        .filter(|r| r.flow.is_none() && !r.in_warmup)
        .collect()
}

/// Over an emulated path that drops 0.5 % of the data direction's frames, the client's
/// retransmits per interval add up to what the client's namespace counted (`Tcp:
/// RetransSegs`; the control connection's segments are the only others it can hold), the
/// window is at least one MSS, and the median window / round trip is between ⅓ and 10 times
/// the throughput the receiver measured (a wrong unit is off by 1000x or more).
#[test]
fn retransmits_cwnd_and_rtt_per_interval_on_a_lossy_path() {
    require_netns();
    let _g = serial();
    let each_way = Duration::from_millis(1);
    let a_to_b = EmuConfig::default().with_delay(each_way).with_loss(0.005);
    let b_to_a = EmuConfig::default().with_delay(each_way);
    let path = EmulatedPath::new(1500, a_to_b, b_to_a).unwrap();
    let (_d, port) = serve_on(&path);
    let tb = path.testbed();
    let before = tb.proto_counter(Side::A, "Tcp", "RetransSegs").unwrap();
    let mut c = path.command(Side::A, BIN);
    c.args([
        "stream", "-H", ADDR_B, "-p", &port, "-t", "3", "--warmup", "0.5", "-i", "0.25", "--json",
    ]);
    let out = c.output().unwrap();
    let after = tb.proto_counter(Side::A, "Tcp", "RetransSegs").unwrap();
    let res = RunResult::from_json(&String::from_utf8_lossy(&out.stdout))
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let s = stream_sum(&res);
    let all: Vec<&TcpIntervalRow> = s
        .tcp_intervals
        .iter()
        .filter(|r| r.flow.is_none())
        .collect();
    assert!(all.len() >= 12, "{} rows", all.len());
    let per_interval: u64 = all.iter().map(|r| r.retransmits).sum();
    let kernel = after - before;
    eprintln!(
        "retransmits: per interval {per_interval}, namespace RetransSegs {kernel}, at close {}",
        s.directions[0].retransmits
    );
    // 0.5 % of thousands of segments: there must be retransmits to count.
    assert!(per_interval > 0, "no retransmit over a lossy path");
    // The sum is the flow's total at close, and the namespace counted as many (plus at most
    // a few segments of the control connection, which crosses the same lossy link).
    assert_eq!(per_interval, s.directions[0].retransmits);
    assert!(
        per_interval <= kernel && kernel <= per_interval + 4,
        "per interval {per_interval}, namespace {kernel}"
    );
    let mss = s.flows[0].mss_bytes.expect("MSS") as u64;
    for row in &all {
        assert!(row.cwnd_bytes >= mss, "{row:?}");
        assert!(
            row.srtt_ns >= 2_000_000 && row.srtt_ns < 2_000_000_000,
            "{row:?}"
        );
    }
    // What the window carries per round trip bounds what the path delivers: bytes in flight
    // never exceed cwnd, so cwnd/srtt is at least about the receiver's throughput (a third
    // of it allowed: samples are instants, cwnd drops after a loss and the round trip
    // follows the forwarder's queue). It may be well above it when the flow was limited by
    // the receiver's window or the application rather than cwnd (3.06x on a 2-vCPU Intel
    // Xeon VM), so the upper bound is 10x: what it must catch is a unit error, which is off
    // by 1000x (µs taken for ns) or 1448x (segments taken for bytes).
    let bps = s.directions[0].receiver_throughput_bps;
    let mut ratio: Vec<f64> = window_rows(s)
        .iter()
        .map(|r| r.cwnd_bytes as f64 * 8.0 / (r.srtt_ns as f64 / 1e9) / bps)
        .collect();
    ratio.sort_by(f64::total_cmp);
    let median = ratio[ratio.len() / 2];
    assert!(
        (1.0 / 3.0..=10.0).contains(&median),
        "cwnd/srtt = {median:.2} × the throughput ({ratio:?})"
    );
}

/// Over 5 ms of emulated delay each way, every window sample's smoothed round trip is at
/// least the 10 ms of delay and not far above what a plain ping-pong sees on the same path.
#[test]
fn srtt_per_interval_follows_an_emulated_delay() {
    require_netns();
    let _g = link_bound();
    let (path, d) = delayed_path_with_daemon(Duration::from_millis(5));
    let port = d.addr.port().to_string();
    let mut c = path.command(Side::A, BIN);
    c.args([
        "stream", "-H", ADDR_B, "-p", &port, "-t", "2", "--warmup", "0.5", "-i", "0.25", "-b",
        "20M", "--json",
    ]);
    let out = c.output().unwrap();
    let res = RunResult::from_json(&String::from_utf8_lossy(&out.stdout))
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let probe = ping_pong_p50_ns(&path, 50);
    let rows = window_rows(stream_sum(&res));
    assert!(rows.len() >= 6, "{} rows", rows.len());
    eprintln!(
        "srtt per interval (µs): {:?}; ping-pong p50 {} µs",
        rows.iter().map(|r| r.srtt_ns / 1000).collect::<Vec<_>>(),
        probe / 1000
    );
    assert!(probe >= 10_000_000, "probe {probe} ns");
    for r in &rows {
        // The kernel's srtt has a granularity of 1 µs and smooths over 8 samples: never below
        // the emulated delay; a paced 20 Mbit/s flow builds no queue, so within 50 ms of the
        // independent ping-pong's median however loaded the forwarder is.
        assert!(r.srtt_ns >= 10_000_000, "{r:?}");
        assert!(r.srtt_ns <= probe + 50_000_000, "{r:?} vs probe {probe} ns");
    }
}

/// The rr histogram counts every window transaction once, and the reported p50 and p99 lie
/// in the buckets the histogram's own ranks point at (within the bucket width and the 0.1 %
/// of the percentiles' 3 significant digits), as do the smallest and largest values.
#[test]
fn the_round_trip_histogram_counts_every_transaction() {
    let _g = serial();
    let r = wb(&["rr", "-t", "1", "-P", "2", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let res = r.json();
    let s = res.runs[0]
        .summary
        .as_ref()
        .and_then(|s| s.rr())
        .expect("an rr summary");
    let h = s.latency_histogram.as_ref().expect("a histogram");
    let l = s.latency.expect("latency");
    assert!(s.transactions > 100, "{}", s.transactions);
    assert_eq!(h.total(), s.transactions);
    assert_eq!(h.total(), l.count);
    assert!(h.buckets.len() <= wirebench_stats::buckets::MAX_BUCKETS);
    for (q, p) in [(0.5, l.p50_ns), (0.99, l.p99_ns), (0.999, l.p999_ns)] {
        let b = h.quantile_bucket(q).expect("not empty");
        assert!(
            b.lo_ns <= p && p as f64 <= b.hi_ns as f64 * 1.001,
            "q {q}: {p} ns not in {b:?}"
        );
    }
    // The extremes lie in the first and last buckets, up to the histogram's placement: a
    // value within 0.1 % above an edge (HdrHistogram's 3 significant digits) is counted in the
    // bucket below it (wirebench_stats::buckets), so the largest can reach 0.1 % past the
    // last bucket's upper edge. A CI run had it so.
    let (first, last) = (h.buckets[0], *h.buckets.last().unwrap());
    assert!(
        first.lo_ns <= l.min_ns,
        "min {} ns below {first:?}",
        l.min_ns
    );
    assert!(
        l.max_ns as f64 <= last.hi_ns as f64 * 1.001,
        "max {} ns above {last:?}",
        l.max_ns
    );
}

/// Forty flows run on the epoll engine: every interval has one row for the direction (none
/// per flow above 16), holding all forty senders, and the rows' retransmits add up to the
/// senders' totals at close.
#[test]
fn many_flows_on_the_epoll_engine_have_direction_rows_only() {
    let _g = serial();
    let r = wb(&["stream", "-t", "1", "-P", "40", "-i", "0.25", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let res = r.json();
    let client = res.runs[0].client.as_ref().expect("client report");
    assert!(
        matches!(
            client.engine,
            Some(wirebench_model::abort::EngineKind::Epoll { .. })
        ),
        "{:?}",
        client.engine
    );
    let s = stream_sum(&res);
    assert!(s.tcp_intervals.len() >= 4, "{}", s.tcp_intervals.len());
    for row in &s.tcp_intervals {
        assert_eq!(row.flow, None);
        assert_eq!(row.flows, 40, "{row:?}");
    }
    let sum: u64 = s.tcp_intervals.iter().map(|r| r.retransmits).sum();
    assert_eq!(sum, s.directions[0].retransmits);
    assert!(s.tcp_intervals.last().unwrap().at_close);
}

/// Both directions at once: the server's senders' TCP_INFO reaches the client through the
/// results exchange, each direction's rows are read at its sending end, and each adds up to
/// that direction's retransmits at close.
#[test]
fn both_directions_carry_their_senders_samples() {
    use wirebench_model::side::HostRole;
    use wirebench_model::spec::FlowDir;
    let _g = serial();
    let r = wb(&["stream", "-t", "1", "-i", "0.25", "--bidir", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let res = r.json();
    let s = stream_sum(&res);
    for d in &s.directions {
        let host = match d.dir {
            FlowDir::ClientToServer => HostRole::Client,
            FlowDir::ServerToClient => HostRole::Server,
        };
        let rows: Vec<_> = s
            .tcp_intervals
            .iter()
            .filter(|r| r.dir == d.dir && r.flow.is_none())
            .collect();
        assert!(rows.len() >= 4, "{:?}: {} rows", d.dir, rows.len());
        assert!(rows.iter().all(|r| r.host == host), "{rows:?}");
        let sum: u64 = rows.iter().map(|r| r.retransmits).sum();
        assert_eq!(sum, d.retransmits, "{:?}", d.dir);
    }
}

/// D-SACK ground truth: over an emulated path that holds 1 % of the data frames back by
/// 2 ms (reordering, no loss), the senders' retransmissions are duplicates the receiver
/// reports back (D-SACK). What the result counts (`tcpi_dsack_dups` at the sender's close,
/// summed over the direction) is what the client's namespace counted (`TcpExt:
/// TCPDSACKRecvSegs`, which the kernel adds to in the same place; a few more allowed for
/// the control connection, which crosses the same link), and the verdict does not call
/// reordering loss.
#[test]
fn reordered_retransmits_are_counted_as_received_twice_not_lost() {
    require_netns();
    let _g = serial();
    let each_way = Duration::from_millis(1);
    let a_to_b = EmuConfig::default()
        .with_delay(each_way)
        .with_reorder(0.01, Duration::from_millis(2));
    let b_to_a = EmuConfig::default().with_delay(each_way);
    let path = EmulatedPath::new(1500, a_to_b, b_to_a).unwrap();
    let (_d, port) = serve_on(&path);
    let tb = path.testbed();
    let before = tb
        .proto_counter(Side::A, "TcpExt", "TCPDSACKRecvSegs")
        .unwrap();
    let mut c = path.command(Side::A, BIN);
    c.args(["stream", "-H", ADDR_B, "-p", &port, "-t", "2", "--json"]);
    let out = c.output().unwrap();
    let after = tb
        .proto_counter(Side::A, "TcpExt", "TCPDSACKRecvSegs")
        .unwrap();
    let counters = path.all_counters();
    let res = RunResult::from_json(&String::from_utf8_lossy(&out.stdout))
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let s = stream_sum(&res);
    let dir = &s.directions[0];
    let dsack = dir
        .dsack_segments
        .expect("the kernel reports tcpi_dsack_dups");
    let kernel = after - before;
    eprintln!(
        "reordered {} of {} frames, dropped {} (overflow {}); retransmits {}, D-SACKed {dsack}, \
         namespace TCPDSACKRecvSegs {kernel}",
        counters.a_to_b.reordered,
        counters.a_to_b.received,
        counters.a_to_b.dropped,
        counters.a_to_b.overflow,
        dir.retransmits
    );
    assert!(
        counters.a_to_b.reordered > 0,
        "the emulator reordered nothing"
    );
    assert_eq!(counters.a_to_b.dropped + counters.a_to_b.overflow, 0);
    assert!(
        dsack > 0,
        "reordering produced no duplicate: nothing to check"
    );
    assert!(dsack <= dir.retransmits, "{dsack} > {}", dir.retransmits);
    assert!(
        dsack <= kernel && kernel <= dsack + 4,
        "result {dsack}, namespace {kernel}"
    );
    let v = res.runs[0]
        .summary
        .as_ref()
        .and_then(|s| s.verdict.clone())
        .expect("verdict");
    if let wirebench_model::verdict::Limiter::Loss { retransmits, .. } = v.limiter {
        panic!("reordering taken for loss: {retransmits} segments ({v:?})");
    }
    // The human result says so.
    let text = wirebench_report::print::human(&res);
    assert!(text.contains("twice (D-SACK)"), "{text}");
}
