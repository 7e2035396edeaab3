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

/// The tick labels of an SVG's first plot, as numbers: the y axis's (right-aligned labels
/// left of the plot) of the first panel and the x axis's (centred labels under the plot).
fn ticks(svg: &str) -> (Vec<f64>, Vec<f64>) {
    let doc = roxmltree::Document::parse(svg).expect("XML");
    let tick = |n: &roxmltree::Node, anchor: &str| {
        n.has_tag_name("text")
            && n.attribute("font-size") == Some("12")
            && n.attribute("text-anchor") == Some(anchor)
    };
    let number = |n: roxmltree::Node| n.text().and_then(|t| t.parse::<f64>().ok());
    // The first panel's y labels come first; they end where the next panel's title starts.
    let mut y = Vec::new();
    for n in doc.descendants().filter(|n| n.has_tag_name("text")) {
        if tick(&n, "end") {
            y.extend(number(n));
        } else if !y.is_empty() && n.attribute("font-weight") == Some("bold") {
            break;
        }
    }
    let x = doc
        .descendants()
        .filter(|n| tick(n, "middle") && n.attribute("dy") == Some("0.8em"))
        .filter_map(number)
        .collect();
    (y, x)
}

/// The report of a stream result opens with the headline figures (the verdict beside them),
/// then the charts; the printer's text is last.
fn check_report_order(json: &str, dir: &TempDir) {
    let page = dir.path("s.html");
    let r = wb(&["report", json, "-o", &page]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    let first = &html[html.find("<section id=\"s1\">").expect("a first section")..];
    let first = &first[..first.find("</section>").unwrap()];
    let at = |what: &str| {
        first
            .find(what)
            .unwrap_or_else(|| panic!("{what} not in the first section"))
    };
    for t in [
        "throughput forward",
        "retransmits forward",
        "RTT forward",
        "client CPU",
        "server CPU",
    ] {
        assert!(at(t) < at("<svg"), "{t} after the first chart");
    }
    assert!(
        at("class=\"verdict") < at("<svg"),
        "verdict after the charts"
    );
    let printed = html
        .find("as `wirebench` printed it")
        .expect("the printed text");
    assert!(
        printed > html.rfind("<svg").unwrap(),
        "terminal text before a chart"
    );
    assert!(
        printed > html.find("Test and environment").unwrap(),
        "terminal text not last"
    );
}

/// With a copy-bandwidth limit 4× the data's largest rate, the throughput axis keeps to the
/// data (its top tick below 2× the data) and the limit is marked off scale; the time axis
/// ends at the last interval's end, not at the next round tick.
fn check_axes(json: &str, dir: &TempDir) {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let intervals = v["runs"][0]["summary"]["workload"]["stream"]["intervals"]
        .as_array()
        .expect("interval rows")
        .clone();
    let max_bps = intervals
        .iter()
        .map(|i| i["throughput_bps"].as_f64().unwrap())
        .fold(0.0, f64::max);
    // The last interval's end on either end's clock (the receivers' rows and the senders'
    // TCP_INFO rows are drawn on one axis).
    let tcp_rows = v["runs"][0]["summary"]["workload"]["stream"]["tcp_intervals"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let end_s = intervals
        .iter()
        .chain(&tcp_rows)
        .map(|i| i["end_s"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(max_bps > 0.0 && end_s > 0.0, "{intervals:?}");
    // Limit = copy_bytes_per_s × 8 / copies_per_byte = 4 × the data's largest rate.
    v["physical"] = serde_json::json!({
        "limits_started_unix_ms": 0, "limits_started_utc": "2026-01-01T00:00:00Z",
        "boot_id": "x", "msg_bytes": 1048576, "buffer_bytes": 1048576, "copy_threads": 1,
        "copy_bytes_per_s": max_bps, "payload_bytes_per_s": max_bps / 8.0,
        "copies_per_byte": 2.0, "copied_bytes_per_s": max_bps / 4.0,
        "copy_bandwidth_pct": 25.0
    });
    let limited = dir.path("limited.json");
    std::fs::write(&limited, v.to_string()).unwrap();
    let svg_path = dir.path("limited.svg");
    let r = wb(&["plot", &limited, "-o", &svg_path]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let (y, x) = ticks(&svg);
    // The axis is in Gbit/s or Mbit/s; its top tick against the data in the same unit.
    let (texts, _) = svg_facts(&svg_path);
    let unit = if texts.iter().any(|t| t.ends_with("(Gbit/s)")) {
        1e9
    } else {
        1e6
    };
    let top = y.iter().copied().fold(f64::MIN, f64::max) * unit;
    assert!(
        top >= max_bps && top < 2.0 * max_bps,
        "throughput axis to {top} for data up to {max_bps} (ticks {y:?})"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("↑ copy-bandwidth limit") && t.ends_with("above the axis")),
        "no off-scale marker: {texts:?}"
    );
    assert!(svg.contains("annotation-offscale"));
    let last = x.iter().copied().fold(f64::MIN, f64::max);
    let step = x[1] - x[0];
    assert!(
        last <= end_s + 1e-9 && last > end_s - step,
        "time axis ticks {x:?} for a test whose last interval ends at {end_s} s"
    );
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
    check_report_order(&json, &dir);
    check_axes(&json, &dir);
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
        // Paced: the figure is checked, not the load (unpaced, it kept both CPUs busy beside
        // the other shared tests).
        "--load-rate",
        "200M",
        "--json",
        "-o",
        &json,
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The boxes are the default figure of an under-load result.
    let svg = dir.path("u.svg");
    let r = wb(&["plot", &json, "-o", &svg]);
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
    // Each box's whiskers say what they are.
    for w in ["p1 ", "p99 "] {
        let n = texts.iter().filter(|x| x.starts_with(w)).count();
        assert_eq!(n, 2, "{w}: {texts:?}");
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
        "--load-rate",
        "200M",
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
    let doc = quick_limits_json();
    std::fs::write(&json, doc).unwrap();
    let l = wirebench_model::limits::LimitsResult::from_json(doc).expect("a limits document");
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
        // Paced: the figure's structure is checked, not the curve (unpaced, 14 points kept
        // both CPUs busy beside the other shared tests).
        "-b",
        "200M",
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
    // Each variant's legend names what sets it apart (--flows) and what the points share
    // beyond the defaults (the pacing rate).
    for flows in ["--flows 1", "--flows 2"] {
        let legend = format!("{flows}, --rate 200.0 Mbit/s");
        assert!(texts.contains(&legend), "{legend}: {texts:?}");
    }
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
        wb(&["stream", "-t", "0.5", "-i", "0.1", "-b", "200M", "--json", "-o", &json]).code,
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
