//! `wirebench plot` and `wirebench report` on real results: the SVG is well-formed XML with
//! the title, axis labels and one series per drawn line the result implies; the HTML page is
//! self-contained (no script, no external resource), and a real browser (headless Chromium)
//! draws it without console messages.

mod common;

use std::path::PathBuf;

use common::*;
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
    let _g = serial();
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
    // Two flows and the forward total.
    assert_eq!(series, 3, "{texts:?}");
    for t in [
        "TCP stream throughput per interval",
        "flow 0",
        "flow 1",
        "total forward",
    ] {
        assert!(texts.iter().any(|x| x == t), "{t} missing from {texts:?}");
    }
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
    let _g = serial();
    let dir = TempDir::new("rr");
    let json = dir.path("r.json");
    let r = wb(&["rr", "-t", "1", "-i", "0.25", "--json", "-o", &json]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for (kind, title, n) in [
        ("timeseries", "Round trip per interval", 2),
        ("tail", "Round-trip tail", 1),
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
}

#[test]
fn a_sweep_plots_its_curve_and_reports_in_a_real_browser() {
    let _g = serial();
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
}
