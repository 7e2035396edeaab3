//! `serve --metrics`: the OpenMetrics endpoint shows the last test's figures with their
//! peer label (equal to the client's own result), counts a refused connection by its
//! reason, passes `promtool check metrics`, and a real Prometheus server (Debian's package,
//! started here on loopback) scrapes it: `up == 1`, the throughput queryable by peer.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::daemon::LocalDaemon;
use crate::common::*;
use wirebench_model::compare::Figure;

/// The metrics address, from the daemon's log.
fn metrics_addr(d: &LocalDaemon) -> SocketAddr {
    d.wait_log("serving metrics at /metrics", 1, Duration::from_secs(5));
    d.log_text()
        .lines()
        .find(|l| l.contains("serving metrics at /metrics"))
        .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix("addr=")))
        .and_then(|a| a.parse().ok())
        .expect("the metrics address in the log")
}

/// `GET path` over HTTP/1.1 (Connection: close): (status line, body).
fn get(addr: SocketAddr, path: &str) -> (String, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read the answer");
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    let status = head.lines().next().unwrap_or("").to_string();
    // Prometheus answers its API chunked; the JSON is between the chunk sizes.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        unchunk(body)
    } else {
        body.to_string()
    };
    (status, body)
}

fn unchunk(mut b: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = b.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        b = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// The value of the sample line starting with `series` (name and labels as written).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .trim()
            .split(' ')
            .next()?
            .parse()
            .ok()
    })
}

/// A child process ended (by PID) when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_last_result_and_refusals_are_exported_and_prometheus_scrapes_them() {
    let _g = shared_timed();
    let d = LocalDaemon::start(&["--metrics", "127.0.0.1:0"]);
    let maddr = metrics_addr(&d);
    let port = d.addr.port().to_string();
    let r = wb(&[
        "stream",
        "-H",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "0.5",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let res = r.json();
    let want = wirebench_analysis::compare::values(std::slice::from_ref(&res))
        .into_iter()
        .find(|(f, _)| *f == Figure::Throughput)
        .map(|(_, v)| v.runs[0])
        .expect("the client's throughput");
    // Something that is not wirebench: a protocol refusal.
    {
        let mut s = TcpStream::connect(d.addr).unwrap();
        let _ = s.write_all(b"GET / HTTP/1.1\r\n\r\n");
        let _ = s.read(&mut [0u8; 64]);
    }
    d.wait_records(1, Duration::from_secs(10));
    let series = "wirebench_last_throughput_bytes_per_second{peer=\"127.0.0.1\",workload=\"stream\",direction=\"forward\"}";
    let t0 = Instant::now();
    let text = loop {
        let (status, body) = get(maddr, "/metrics");
        assert!(status.contains("200"), "{status}");
        if sample(&body, series).is_some()
            && sample(&body, "wirebench_refusals_total{reason=\"protocol\"}").is_some()
        {
            break body;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "{body}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let got = sample(&text, series).unwrap();
    assert!(
        (got * 8.0 - want).abs() <= want * 1e-6,
        "exported {got} B/s, the client's result says {want} bit/s"
    );
    assert!(sample(&text, "wirebench_refusals_total{reason=\"protocol\"}").unwrap() >= 1.0);
    assert_eq!(
        sample(
            &text,
            "wirebench_tests_recorded_total{status=\"completed\"}"
        ),
        Some(1.0),
        "{text}"
    );
    assert!(sample(&text, "process_open_fds").unwrap() > 3.0);
    assert!(sample(&text, "process_resident_memory_bytes").unwrap() > 1e6);
    // Without an Accept header: the Prometheus text format, the same samples.
    assert!(
        text.contains("# TYPE wirebench_refusals_total counter"),
        "{text}"
    );
    assert!(!text.contains("# EOF"));
    // Only /metrics, only GET/HEAD.
    assert!(get(maddr, "/").0.contains("404"));
    // promtool's lint of the exposition.
    let have_prom = wirebench_sys::require::capability(
        "prometheus",
        wirebench_sys::require::command_works("prometheus", "--version")
            && wirebench_sys::require::command_works("promtool", "--version"),
        "Debian's prometheus package (prometheus, promtool)",
    );
    if !have_prom {
        return;
    }
    let mut lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lint.stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = lint.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // A real Prometheus scraping every 200 ms.
    let dir = std::env::temp_dir().join(format!("wb-prom-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 200ms\n  scrape_timeout: 200ms\nscrape_configs:\n  - job_name: wirebench\n    static_configs:\n      - targets: ['{maddr}']\n"
        ),
    )
    .unwrap();
    let web = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let prom = Killed(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={web}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus"),
    );
    let query = |q: &str| -> String {
        let enc: String = q
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        match TcpStream::connect(web) {
            Ok(_) => get(web, &format!("/api/v1/query?query={enc}")).1,
            Err(_) => String::new(),
        }
    };
    let t0 = Instant::now();
    let found = loop {
        let up = query("up{job=\"wirebench\"}");
        let tp = query("wirebench_last_throughput_bytes_per_second{peer=\"127.0.0.1\"}");
        if up.contains("\"1\"]") && tp.contains("\"workload\":\"stream\"") {
            break tp;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "Prometheus did not scrape the endpoint in 60 s: up {up}, throughput {tp}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let v: serde_json::Value = serde_json::from_str(&found).unwrap();
    let scraped: f64 = v["data"]["result"][0]["value"][1]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((scraped - got).abs() <= got * 1e-9, "{scraped} vs {got}");
    drop(prom);
    let _ = std::fs::remove_dir_all(&dir);
}
