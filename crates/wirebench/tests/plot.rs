//! `wirebench plot` and `wirebench report` on real results: the SVG is well-formed XML with
//! the title, axis labels and one series per drawn line the result implies; the HTML page is
//! self-contained (no script, no external resource), and a real browser (headless Chromium)
//! draws it without console messages.

use std::path::PathBuf;

use crate::common::*;
use wirebench_plot::browser::{check_page, Chromium};

/// A fresh directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("wb-plot-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The texts and the number of `series` groups of an SVG file.
fn svg_facts(path: &str) -> (Vec<String>, usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{path}: not XML: {e}"));
    let texts = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(String::from))
        .collect();
    let series = doc
        .descendants()
        .filter(|n| {
            n.has_tag_name("g")
                && n.attribute("class")
                    .is_some_and(|c| c.split_whitespace().next() == Some("series"))
        })
        .count();
    (texts, series)
}

#[test]
fn a_stream_result_plots_its_flows_and_total() {
    let _g = shared();
    let dir = TempDir::new("stream");
    let json = dir.path("s.json");
    let r = wb(&[
        "stream", "-t", "1", "-i", "0.25", "-P", "2", "--json", "-o", &json,
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let svg = dir.path("s.svg");
    let r = wb(&["plot", &json, "-o", &svg]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (texts, series) = svg_facts(&svg);
    // Two flows and the forward total on each of the four panels: throughput, and the
    // senders' retransmits, cwnd and round trip.
    assert_eq!(series, 12, "{texts:?}");
    for t in [
        "TCP stream throughput, retransmits, cwnd and RTT per interval",
        "flow 0",
        "flow 1",
        "total forward",
        "payload throughput at the receiver (Gbit/s)",
        "retransmitted in the interval (sender) (segments)",
        "time since each end's start (s)",
    ] {
        assert!(texts.iter().any(|x| x == t), "{t} missing from {texts:?}");
    }
    assert!(
        texts
            .iter()
            .any(|x| x.starts_with("smoothed round trip (sender) (")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|x| x.contains("Gbit/s") || x.contains("Mbit/s")),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|x| x.contains("stream ·")),
        "subtitle: {texts:?}"
    );
    // A figure the result does not have is refused, naming those it has.
    let r = wb(&["plot", &json, "--kind", "curve"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("it has: timeseries"), "{}", r.stderr);
    let r = wb(&["plot", &json, "-o", &dir.path("s.png")]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("SVG only"), "{}", r.stderr);
}

#[test]
fn an_rr_result_plots_its_interval_percentiles_and_tail() {
    let _g = shared();
    let dir = TempDir::new("rr");
    let json = dir.path("r.json");
    let r = wb(&["rr", "-t", "1", "-i", "0.25", "--json", "-o", &json]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for (kind, title, n) in [
        ("timeseries", "Round trip per interval", 2),
        ("tail", "Round-trip tail", 1),
        // The tail curve under the histogram's bars.
        ("histogram", "Round-trip histogram", 1),
    ] {
        let svg = dir.path(&format!("{kind}.svg"));
        let r = wb(&["plot", &json, "--kind", kind, "-o", &svg]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let (texts, series) = svg_facts(&svg);
        assert_eq!(series, n, "{kind}: {texts:?}");
        assert!(texts.iter().any(|x| x == title), "{kind}: {texts:?}");
        assert!(
            texts.iter().any(|x| x.starts_with("round trip")),
            "{kind}: {texts:?}"
        );
    }
    // The histogram marks the three percentiles and has its tail axis.
    let (texts, _) = svg_facts(&dir.path("histogram.svg"));
    for p in ["p50 ", "p99 ", "p99.9 "] {
        assert!(texts.iter().any(|x| x.starts_with(p)), "{p}: {texts:?}");
    }
    assert!(
        texts.iter().any(|x| x == "samples above x (%)"),
        "{texts:?}"
    );
}

/// `rr --under-load`: the idle and the loaded round trips as two boxes, and a page with
/// every figure of the rr result drawn by a real browser.
#[test]
fn an_under_load_result_plots_its_boxes_and_reports_in_a_real_browser() {
    let _g = shared();
    let dir = TempDir::new("ul");
    let json = dir.path("u.json");
    let r = wb(&[
        "rr",
        "-t",
        "1",
        "-i",
        "0.25",
        "--under-load",
        "1",
        "--json",
        "-o",
        &json,
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let svg = dir.path("u.svg");
    let r = wb(&["plot", &json, "--kind", "under-load", "-o", &svg]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("XML");
    let (texts, series) = svg_facts(&svg);
    assert_eq!(series, 1, "{texts:?}");
    // One box per category: idle and loaded.
    let boxes = doc
        .descendants()
        .filter(|n| {
            n.has_tag_name("rect")
                && n.ancestors()
                    .any(|a| a.attribute("class") == Some("series s0"))
        })
        .count();
    assert_eq!(boxes, 2, "{texts:?}");
    for t in [
        "Round trip idle and under load",
        "idle",
        "beside 1 stream flow",
    ] {
        assert!(texts.iter().any(|x| x == t), "{t}: {texts:?}");
    }
    assert!(texts
        .iter()
        .any(|x| x.starts_with("round trip at the client")));
    let page = dir.path("u.html");
    let r = wb(&["report", &json, "-o", &page]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    for t in [
        "Round trip per interval",
        "Round-trip tail",
        "Round-trip histogram",
        "Round trip idle and under load",
    ] {
        assert!(html.contains(t), "{t} missing from the page");
    }
    assert_self_contained(&html);
    browser_check(&page, &dir.path("u.png"));
}

/// A sweep over `--under-load`: per load level an idle and a loaded box, one series each.
#[test]
fn an_under_load_sweep_plots_latency_against_the_load() {
    let _g = shared();
    let dir = TempDir::new("ulsweep");
    let out = dir.path("ul");
    let r = wb(&[
        "sweep",
        "rr",
        "--under-load",
        "1,2",
        "-t",
        "0.3",
        "-o",
        &out,
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let svg = dir.path("ul.svg");
    let r = wb(&["plot", &out, "--kind", "latency-vs-load", "-o", &svg]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (texts, series) = svg_facts(&svg);
    assert_eq!(series, 2, "{texts:?}");
    for t in [
        "Round trip vs --under-load",
        "idle",
        "loaded",
        "1 flow",
        "2 flows",
        "stream flows of the load (--under-load)",
    ] {
        assert!(texts.iter().any(|x| x == t), "{t}: {texts:?}");
    }
    let page = dir.path("ul.html");
    let r = wb(&["report", &out, "-o", &page]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Round trip vs --under-load"));
    assert_self_contained(&html);
}

/// The page is self-contained: no script, no external resource.
fn assert_self_contained(html: &str) {
    assert!(
        !html.contains("<script") && !html.contains("src=\"http") && !html.contains("href=\"http")
    );
}

/// Headless Chromium draws the page without console messages, and it is not blank.
fn browser_check(page: &str, png: &str) {
    let chromium = Chromium::find().unwrap_or_else(|e| panic!("capability missing: {e}"));
    let check = check_page(
        &chromium,
        std::path::Path::new(page),
        std::path::Path::new(png),
    )
    .expect("chromium run");
    let problems = check.problems(0.03);
    assert!(problems.is_empty(), "{problems:#?}");
}

/// `wirebench plot` and `report` on the JSON of `wirebench limits`: bandwidth against the
/// buffer size, one series per figure the document has, and a page a browser draws.
#[test]
fn a_limits_document_plots_and_reports() {
    let _g = shared();
    let dir = TempDir::new("limits");
    let json = dir.path("l.json");
    let mut c = std::process::Command::new(BIN);
    c.args(["limits", "--quick", "--json"])
        .env("WIREBENCH_STATE_DIR", &dir.0);
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&json, &out.stdout).unwrap();
    let l = wirebench_model::limits::LimitsResult::from_json(&String::from_utf8_lossy(&out.stdout))
        .expect("a limits document");
    let svg = dir.path("l.svg");
    let r = wb(&["plot", &json, "-o", &svg]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (texts, series) = svg_facts(&svg);
    let want = [
        l.memory
            .iter()
            .any(|m| m.copy_one_thread_bytes_per_s.is_some()),
        l.memory
            .iter()
            .any(|m| m.copy_all_threads_bytes_per_s.is_some()),
        l.memory.iter().any(|m| m.checksum_bytes_per_s.is_some()),
    ]
    .iter()
    .filter(|&&b| b)
    .count();
    assert!(want >= 2, "{l:?}");
    assert_eq!(series, want, "{texts:?}");
    for t in [
        "Memory copy and checksum bandwidth vs buffer size",
        "copy, 1 thread",
        "buffer size",
    ] {
        assert!(texts.iter().any(|x| x == t), "{t}: {texts:?}");
    }
    assert!(
        texts.iter().any(|x| x.starts_with("bytes processed (")),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|x| x.ends_with("MiB")),
        "a byte axis: {texts:?}"
    );
    let page = dir.path("l.html");
    let r = wb(&["report", &json, "-o", &page]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Memory copy and checksum bandwidth") && html.contains("<svg"));
    assert!(
        html.contains("system call"),
        "the syscall figure in the caption or the text"
    );
    assert_self_contained(&html);
    browser_check(&page, &dir.path("l.png"));
}

#[test]
fn a_sweep_plots_its_curve_and_reports_in_a_real_browser() {
    let _g = shared();
    let dir = TempDir::new("sweep");
    let out = dir.path("sw");
    let r = wb(&[
        "sweep",
        "stream",
        "--msg-size",
        "1K..64K",
        "--points-per-octave",
        "1",
        "--perturb",
        "0",
        "--flows",
        "1,2",
        "-t",
        "0.3",
        "-o",
        &out,
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let svg = dir.path("sw.svg");
    let r = wb(&["plot", &out, "-o", &svg]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (texts, series) = svg_facts(&svg);
    // One line per variant (--flows 1 and 2) along the message size.
    assert_eq!(series, 2, "{texts:?}");
    assert!(
        texts
            .iter()
            .any(|x| x == "TCP stream throughput vs --msg-size"),
        "{texts:?}"
    );
    assert!(texts.iter().any(|x| x == "--flows 1") && texts.iter().any(|x| x == "--flows 2"));
    assert!(
        texts.iter().any(|x| x.ends_with("KiB")),
        "a byte axis: {texts:?}"
    );
    // The page: self-contained, and drawn by a browser without complaint.
    let page = dir.path("sw.html");
    let r = wb(&["report", &out, "-o", &page]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<svg") && html.contains("reproduce"),
        "figure and command"
    );
    assert!(
        !html.contains("<script") && !html.contains("src=\"http") && !html.contains("href=\"http")
    );
    let chromium = Chromium::find().unwrap_or_else(|e| panic!("capability missing: {e}"));
    let check = check_page(
        &chromium,
        std::path::Path::new(&page),
        std::path::Path::new(&dir.path("sw.png")),
    )
    .expect("chromium run");
    let problems = check.problems(0.03);
    assert!(problems.is_empty(), "{problems:#?}");
    // A test's page too.
    let json = dir.path("s.json");
    assert_eq!(
        wb(&["stream", "-t", "0.5", "-i", "0.1", "--json", "-o", &json]).code,
        0
    );
    let page = dir.path("s.html");
    let r = wb(&["report", &json, "-o", &page]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("wirebench stream -t 0.5"),
        "the command that reproduces it"
    );
    assert!(html.contains("CPU model") && html.contains("<svg"));
    // With the senders' TCP_INFO panels, drawn by the browser.
    assert!(html.contains("TCP stream throughput, retransmits, cwnd and RTT per interval"));
    assert!(html.contains("congestion window (sender)"));
    assert_self_contained(&html);
    browser_check(&page, &dir.path("s.png"));
}
