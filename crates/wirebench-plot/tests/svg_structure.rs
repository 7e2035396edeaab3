//! Structure of the rendered SVG: well-formed XML, the expected number of series and bars,
//! axis titles and tick labels with units, titles, escaping, and marks drawn where the axes
//! say their values are (checked against plotters' own tick label positions).

use roxmltree::{Document, Node};
use wirebench_plot::gallery;
use wirebench_plot::*;

fn parse(svg: &Svg) -> Document<'_> {
    Document::parse(svg.as_str()).unwrap_or_else(|e| panic!("SVG is not XML: {e}"))
}

fn class_is(n: &Node, first: &str) -> bool {
    n.attribute("class")
        .is_some_and(|c| c.split_whitespace().next() == Some(first))
}

fn groups<'a>(doc: &'a Document<'a>, first: &str) -> Vec<Node<'a, 'a>> {
    doc.descendants()
        .filter(|n| n.has_tag_name("g") && class_is(n, first))
        .collect()
}

fn texts(doc: &Document) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").to_string())
        .collect()
}

/// `(x, y)` of the text elements whose content is exactly `s`.
fn text_pos(doc: &Document, s: &str) -> Vec<(f64, f64)> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text") && n.text() == Some(s))
        .map(|n| (num(n.attribute("x")), num(n.attribute("y"))))
        .collect()
}

fn num(a: Option<&str>) -> f64 {
    a.and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("numeric attribute expected, got {a:?}"))
}

fn assert_clean(svg: &Svg) {
    let s = svg.as_str();
    assert!(!s.contains("<script"), "script in SVG");
    assert!(!s.contains("@font-face") && !s.contains(".ttf") && !s.contains(".woff"));
    assert_eq!(
        s.matches("http").count(),
        1,
        "only the xmlns URL may appear"
    );
    for (i, _) in s.match_indices("url(") {
        assert!(s[i..].starts_with("url(#"), "external url( in SVG");
    }
    let doc = parse(svg);
    let font = doc.root_element().attribute("font-family").unwrap_or("");
    assert!(
        font.ends_with("sans-serif"),
        "generic family must end the stack: {font}"
    );
}

#[test]
fn sweep_has_two_series_overlay_axes_and_units() {
    let fig = gallery::sweep();
    let svg = fig.render_svg().expect("render");
    assert_clean(&svg);
    let doc = parse(&svg);
    assert_eq!(groups(&doc, "series").len(), 2);
    assert_eq!(groups(&doc, "overlay").len(), 1);
    assert_eq!(groups(&doc, "legend-entry").len(), 3);
    // 21 points × 2 series with error bars.
    assert_eq!(groups(&doc, "errorbar").len(), 42);
    let t = texts(&doc);
    for want in [
        "TCP stream throughput vs message size",
        "message size",
        "throughput (Gbit/s)",
        "1 KiB",
        "1 MiB",
        "n½ = 6.2 KiB",
        "saturation 94.1 Gbit/s",
        "physical limit",
    ] {
        assert!(
            t.iter().any(|x| x == want),
            "missing text {want:?} in {t:?}"
        );
    }
    let names: Vec<&str> = groups(&doc, "series")
        .iter()
        .filter_map(|g| g.attribute("data-name"))
        .collect();
    assert_eq!(names, ["copy (send)", "zero-copy (MSG_ZEROCOPY)"]);
}

#[test]
fn log2_ticks_are_evenly_spaced_powers_of_two() {
    let doc_svg = gallery::sweep().render_svg().expect("render");
    let doc = parse(&doc_svg);
    let xs: Vec<f64> = ["1 B", "4 B", "16 B", "64 B", "256 B", "1 KiB", "4 KiB"]
        .iter()
        .map(|l| {
            let p = text_pos(&doc, l);
            assert_eq!(p.len(), 1, "tick {l} drawn {} times", p.len());
            p[0].0
        })
        .collect();
    let gaps: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
    for g in &gaps {
        assert!((g - gaps[0]).abs() <= 1.0, "uneven log2 spacing: {gaps:?}");
        assert!(*g > 30.0, "ticks crowd: {gaps:?}");
    }
}

#[test]
fn data_lands_where_the_axis_labels_say() {
    // A line through (0,0), (10,40), (20,100) on fixed ranges: its pixels must coincide with
    // the tick labels plotters drew for 0/10/20 and 0/40/100.
    let fig = Figure {
        heading: Heading::new("calibration", ""),
        x: Axis::linear("x", Unit::None).with_range(0.0, 20.0),
        y: Axis::linear("y", Unit::None).with_range(0.0, 100.0),
        series: vec![Series::new(
            "line",
            SeriesKind::Line,
            &[(0.0, 0.0), (10.0, 40.0), (20.0, 100.0)],
        )],
        ..Figure::default()
    };
    let svg = fig.render_svg().expect("render");
    let doc = parse(&svg);
    let g = groups(&doc, "series");
    let poly = g[0]
        .descendants()
        .find(|n| n.has_tag_name("polyline"))
        .expect("polyline");
    let pts: Vec<(f64, f64)> = poly
        .attribute("points")
        .unwrap_or("")
        .split_whitespace()
        .map(|p| {
            let (a, b) = p.split_once(',').expect("x,y");
            (a.parse().expect("x"), b.parse().expect("y"))
        })
        .collect();
    assert_eq!(pts.len(), 3);
    let x_tick = |l: &str| {
        text_pos(&doc, l)
            .into_iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .expect("x tick")
            .0
    };
    let y_tick = |l: &str| {
        text_pos(&doc, l)
            .into_iter()
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("y tick")
            .1
    };
    for ((px, py), (xl, yl)) in pts.iter().zip([("0", "0"), ("10", "40"), ("20", "100")]) {
        assert!(
            (px - x_tick(xl)).abs() <= 1.0,
            "x {px} vs tick {xl} at {}",
            x_tick(xl)
        );
        assert!(
            (py - y_tick(yl)).abs() <= 1.0,
            "y {py} vs tick {yl} at {}",
            y_tick(yl)
        );
    }
}

#[test]
fn secondary_axis_has_its_own_labels_once() {
    let svg = gallery::two_axes().render_svg().expect("render");
    assert_clean(&svg);
    let doc = parse(&svg);
    assert_eq!(groups(&doc, "series").len(), 2);
    let t = texts(&doc);
    assert_eq!(t.iter().filter(|x| *x == "throughput (Mbit/s)").count(), 1);
    assert_eq!(t.iter().filter(|x| *x == "p99 latency").count(), 1);
    assert!(t.iter().any(|x| x == "1 ms"), "{t:?}");
    assert!(t.iter().any(|x| x == "p99 latency (right axis)"));
    assert!(t.iter().any(|x| x == "tbf 100 Mbit/s"));
}

#[test]
fn bars_count_categories_times_groups() {
    let f = gallery::cpu_bars();
    let svg = f.render_svg().expect("render");
    assert_clean(&svg);
    let doc = parse(&svg);
    let bars = groups(&doc, "bar");
    assert_eq!(bars.len(), 6);
    // Each bar stacks five non-zero components.
    for b in &bars {
        assert_eq!(
            b.descendants().filter(|n| n.has_tag_name("rect")).count(),
            5
        );
    }
    assert_eq!(groups(&doc, "legend-entry").len(), 5);
    let t = texts(&doc);
    for want in [
        "MTU 1500",
        "MTU 65520",
        "zero-copy",
        "CPU time (%)",
        "path MTU",
    ] {
        assert!(t.iter().any(|x| x == want), "missing {want:?}");
    }
    let ladder = gallery::ladder().render_svg().expect("render");
    let doc = parse(&ladder);
    assert_eq!(groups(&doc, "bar").len(), 6);
    assert!(texts(&doc).iter().any(|x| x == "94.1 Gbit/s"));
    // One error bar per bar (a line and two caps), across the bar's end: from inside the
    // bar (its low end, 95 % of the value) to past it (104 %).
    let bars = groups(&doc, "bar");
    let errs = groups(&doc, "error-bar");
    assert_eq!(errs.len(), 6);
    for (b, e) in bars.iter().zip(&errs) {
        let lines: Vec<_> = e.descendants().filter(|n| n.has_tag_name("line")).collect();
        assert_eq!(lines.len(), 3);
        let x = |n: &roxmltree::Node, a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
        let (lo, hi) = (x(&lines[0], "x1"), x(&lines[0], "x2"));
        let rect = b.descendants().find(|n| n.has_tag_name("rect")).unwrap();
        let end = x(&rect, "x") + x(&rect, "width");
        assert!(
            lo < end && end < hi,
            "error bar {lo}..{hi} across the bar's end {end}"
        );
    }
}

#[test]
fn error_bars_are_validated() {
    let mut f = gallery::ladder();
    f.errors[2][0] = Some((2.0, 1.0));
    assert!(matches!(f.render_svg(), Err(PlotError::Invalid(_))));
    let mut f = gallery::ladder();
    f.errors.pop();
    assert!(matches!(f.render_svg(), Err(PlotError::Invalid(_))));
    let mut f = gallery::ladder();
    f.errors[0][0] = None;
    let doc_svg = f.render_svg().expect("a bar may have no error bar");
    assert_eq!(groups(&parse(&doc_svg), "error-bar").len(), 5);
}

#[test]
fn bar_shapes_are_validated() {
    let mut f = gallery::cpu_bars();
    f.values[1].pop();
    assert!(matches!(f.render_svg(), Err(PlotError::Invalid(_))));
    let mut f = gallery::ladder();
    f.value_axis.scale = Scale::Log10;
    assert!(matches!(f.render_svg(), Err(PlotError::Invalid(_))));
    assert!(matches!(
        gallery::sweep().render_svg_sized(100, 100),
        Err(PlotError::TooSmall { .. })
    ));
}

#[test]
fn histogram_bins_tail_and_percentiles() {
    let h = gallery::histogram();
    let svg = h.render_svg().expect("render");
    assert_clean(&svg);
    let doc = parse(&svg);
    let hist = groups(&doc, "histogram");
    let nonzero = h.bins.iter().filter(|b| b.count > 0).count();
    assert_eq!(
        hist[0]
            .descendants()
            .filter(|n| n.has_tag_name("rect"))
            .count(),
        nonzero
    );
    assert_eq!(groups(&doc, "tail").len(), 1);
    let t = texts(&doc);
    for want in [
        "p50 28.1 µs",
        "p99 63.5 µs",
        "p99.9 212 µs",
        "round-trip latency",
        "10 µs",
    ] {
        assert!(t.iter().any(|x| x == want), "missing {want:?} in {t:?}");
    }
    // Tail curve against a direct count: share of samples above each bin's upper edge.
    let total: u64 = h.bins.iter().map(|b| b.count).sum();
    let tail = h.tail_points();
    let mut above = total;
    for (b, p) in h.bins.iter().zip(&tail[1..]) {
        above -= b.count;
        assert!((p.1 - above as f64 * 100.0 / total as f64).abs() < 1e-9);
    }
}

#[test]
fn panels_share_x_and_count_series() {
    let p = gallery::panels();
    let svg = p.render_svg().expect("render");
    assert_clean(&svg);
    let doc = parse(&svg);
    for (i, panel) in p.panels.iter().enumerate() {
        let g = groups(&doc, "panel")
            .into_iter()
            .find(|g| g.attribute("class") == Some(&format!("panel p{i}")))
            .expect("panel group");
        let n = g
            .descendants()
            .filter(|n| n.has_tag_name("g") && class_is(n, "series"))
            .count();
        assert_eq!(n, panel.series.len(), "panel {i}");
    }
    // x tick labels only once (bottom panel), legend entries once per flow + total.
    assert_eq!(text_pos(&doc, "15").len(), 1);
    assert_eq!(groups(&doc, "legend-entry").len(), 5);
    assert!(texts(&doc).iter().any(|x| x == "time (s)"));
}

#[test]
fn boxes_per_series_and_category() {
    let b = gallery::boxes();
    let svg = b.render_svg().expect("render");
    assert_clean(&svg);
    let doc = parse(&svg);
    assert_eq!(groups(&doc, "series").len(), 2);
    assert_eq!(groups(&doc, "box").len(), 12);
    assert!(texts(&doc).iter().any(|x| x == "99 %"));
}

#[test]
fn hostile_strings_are_escaped() {
    let nasty = "<script>alert(\"x\")</script> & '\u{1}\u{7f}";
    let fig = Figure {
        heading: Heading::new(nasty, nasty),
        x: Axis::linear(nasty, Unit::Other(nasty.into())),
        y: Axis::linear("y", Unit::None),
        series: vec![Series::new(nasty, SeriesKind::Points, &[(1.0, 2.0)])],
        annotations: vec![Annotation::VLine {
            x: 1.0,
            label: nasty.into(),
        }],
        ..Figure::default()
    };
    let svg = fig.render_svg().expect("render");
    assert!(!svg.as_str().contains("<script"));
    assert!(!svg.as_str().contains('\u{1}') && !svg.as_str().contains('\u{7f}'));
    let doc = parse(&svg);
    let cleaned = "<script>alert(\"x\")</script> & '\u{fffd}\u{fffd}";
    assert!(texts(&doc).iter().any(|t| t == cleaned));
    let g = groups(&doc, "series");
    assert_eq!(g[0].attribute("data-name"), Some(cleaned));
}

#[test]
fn annotation_labels_do_not_overlap() {
    // Six reference lines 1/40 of the axis apart: their labels must stack, not collide.
    let mut fig = gallery::sweep();
    fig.annotations = (0..6)
        .map(|i| Annotation::VLine {
            x: 1024.0 * 2f64.powf(f64::from(i) * 0.5),
            label: format!("reference line {i}"),
        })
        .collect();
    let svg = fig.render_svg().expect("render");
    let doc = parse(&svg);
    let labels = groups(&doc, "annotation-labels");
    let boxes: Vec<(f64, f64, f64, f64)> = labels[0]
        .children()
        .filter(|n| n.has_tag_name("rect"))
        .map(|r| {
            let (x, y) = (num(r.attribute("x")), num(r.attribute("y")));
            (
                x,
                y,
                x + num(r.attribute("width")),
                y + num(r.attribute("height")),
            )
        })
        .collect();
    assert_eq!(boxes.len(), 6);
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            let overlap = a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3;
            assert!(!overlap, "labels overlap: {a:?} {b:?}");
        }
    }
}

#[test]
fn degenerate_inputs_still_render() {
    let nan = f64::NAN;
    let cases = [
        Figure::default(),
        Figure {
            x: Axis::log2("size", Unit::Bytes),
            y: Axis::log10("rate", Unit::BitsPerSecond),
            series: vec![Series::new(
                "gaps",
                SeriesKind::LineWithPoints,
                &[
                    (0.0, 1.0),
                    (-4.0, 5.0),
                    (8.0, nan),
                    (16.0, 1e9),
                    (32.0, 0.0),
                    (64.0, 2e9),
                ],
            )],
            ..Figure::default()
        },
        Figure {
            series: vec![Series::new("one", SeriesKind::Step, &[(5.0, 5.0)])],
            ..Figure::default()
        },
        Figure {
            series: vec![Series::new(
                "flat",
                SeriesKind::Line,
                &[(1.0, 0.0), (2.0, 0.0)],
            )],
            y2: Some(Axis::linear("empty right", Unit::Percent)),
            ..Figure::default()
        },
    ];
    for (i, f) in cases.iter().enumerate() {
        let svg = f.render_svg().unwrap_or_else(|e| panic!("case {i}: {e}"));
        let doc = parse(&svg);
        assert!(
            !svg.as_str().contains("NaN") && !svg.as_str().contains("inf"),
            "case {i}"
        );
        assert_eq!(groups(&doc, "series").len(), f.series.len(), "case {i}");
    }
    // In the gap case only the positive, finite points 16 and 64 are drawable, and the zero
    // at 32 between them breaks the line: two single-point runs.
    let svg = cases[1].render_svg().expect("render");
    let doc = parse(&svg);
    let polylines = groups(&doc, "series")[0]
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .count();
    assert_eq!(polylines, 0, "single-point runs draw no line");
    let markers = groups(&doc, "series")[0]
        .descendants()
        .filter(|n| n.has_tag_name("circle"))
        .count();
    assert_eq!(markers, 2, "markers only at the drawable points 16 and 64");
    let empty_panels = PanelFigure::default().render_svg();
    assert!(matches!(empty_panels, Err(PlotError::Invalid(_))));
}

/// A 3-host mesh's throughput: 9 cells in 3 rows, the diagonal blank, a missing cell grey
/// with its reason, each value as text, the lightest cell the largest value, host names
/// escaped.
#[test]
fn heatmap_has_a_cell_per_pair_coloured_by_value() {
    let hosts: Vec<String> = ["10.0.0.1:5201", "10.0.0.2:5201", "<b>&"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let fig = HeatmapFigure {
        heading: Heading::new("Throughput per pair", "3 hosts"),
        rows: hosts.clone(),
        columns: hosts,
        row_label: "client".into(),
        column_label: "server".into(),
        value: Axis::linear("receiver throughput", Unit::BitsPerSecond),
        values: vec![
            vec![None, Some(9.4e9), Some(1.0e9)],
            vec![Some(5.0e9), None, None],
            vec![Some(2.0e9), Some(3.0e9), None],
        ],
        missing: vec![
            vec![String::new(); 3],
            vec![String::new(), String::new(), "down".into()],
            vec![String::new(); 3],
        ],
        lower_is_better: false,
    };
    let svg = fig.render_svg().expect("render");
    assert_clean(&svg);
    let doc = parse(&svg);
    let cells = groups(&doc, "cell");
    assert_eq!(cells.len(), 9);
    let fill = |row: &str, col: &str| -> String {
        let c = cells
            .iter()
            .find(|n| {
                n.attribute("data-row") == Some(row) && n.attribute("data-column") == Some(col)
            })
            .expect("the cell");
        let rect = c
            .children()
            .find(|n| n.has_tag_name("rect"))
            .expect("a rect");
        rect.attribute("fill").unwrap_or("").to_string()
    };
    // Lightest (viridis' yellow end) for the largest value, darkest for the smallest.
    assert_eq!(fill("0", "1"), "#fde725");
    assert_eq!(fill("0", "2"), "#440154");
    assert_eq!(fill("1", "2"), "#cccccc", "missing: grey");
    assert_eq!(fill("1", "1"), "#f4f4f4", "diagonal: blank");
    let t = texts(&doc);
    assert!(t.iter().any(|s| s == "9.4 Gbit/s"), "{t:?}");
    assert!(t.iter().any(|s| s == "down"));
    assert!(t.iter().any(|s| s == "<b>&"), "names are text, not markup");
    assert!(svg.as_str().contains("&lt;b&gt;&amp;"));
    // Latency: the scale flips, the smallest value lightest.
    let lat = HeatmapFigure {
        lower_is_better: true,
        ..fig
    };
    let svg = lat.render_svg().expect("render");
    let doc = parse(&svg);
    let cells = groups(&doc, "cell");
    let c = cells
        .iter()
        .find(|n| n.attribute("data-row") == Some("0") && n.attribute("data-column") == Some("2"))
        .expect("the cell");
    let rect = c
        .children()
        .find(|n| n.has_tag_name("rect"))
        .expect("a rect");
    assert_eq!(rect.attribute("fill"), Some("#fde725"));
}
