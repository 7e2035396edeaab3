//! Sample figures of every kind built from synthetic data with known shape: used by the
//! `gallery` example and the tests, and as examples of how to fill the figure model.

use crate::html::{
    Block, Column, DataTable, Expectation, KeyValueTable, Outcome, Report, Section, Verdict,
};
use crate::model::*;
use crate::render::Render;
use crate::units::{format_bits_per_s, format_bytes};
use crate::PlotError;

/// Hockney model `r(n) = r∞ · n / (n + n½)`.
pub fn hockney(r_inf_bps: f64, n_half_bytes: f64, n_bytes: f64) -> f64 {
    r_inf_bps * n_bytes / (n_bytes + n_half_bytes)
}

/// Throughput vs message size, copy and zero-copy, with error bars, a Hockney overlay,
/// reference lines, a marked dip and a shaded band.
pub fn sweep() -> Figure {
    let r_inf = 94.1e9;
    let n_half = 6.2 * 1024.0;
    let sizes: Vec<f64> = (0..=20).map(|e| 2f64.powi(e)).collect();
    let mut copy = Series::new("copy (send)", SeriesKind::LineWithPoints, &[]);
    let mut zc = Series::new("zero-copy (MSG_ZEROCOPY)", SeriesKind::LineWithPoints, &[]);
    for &n in &sizes {
        let c = hockney(r_inf * 0.82, n_half, n) * if n == 65536.0 { 0.78 } else { 1.0 };
        copy.points.push(Point::with_err(n, c, c * 0.96, c * 1.03));
        let z = hockney(r_inf, n_half * 2.5, n);
        zc.points.push(Point::with_err(n, z, z * 0.97, z * 1.02));
    }
    Figure {
        heading: Heading::new(
            "TCP stream throughput vs message size",
            "tcp_stream · veth ns-a → ns-b · MTU 9000 · 2026-11-24 · 5 runs, 95 % CI",
        ),
        x: Axis::log2("message size", Unit::Bytes),
        y: Axis::linear("throughput", Unit::BitsPerSecond),
        y2: None,
        series: vec![copy, zc],
        annotations: vec![
            Annotation::VLine {
                x: n_half,
                label: format!("n½ = {}", format_bytes(n_half)),
            },
            Annotation::HLine {
                y: r_inf,
                label: format!("saturation {}", format_bits_per_s(r_inf)),
                axis: YAxis::Y,
            },
            Annotation::HLine {
                y: 100e9,
                label: "physical limit".into(),
                axis: YAxis::Y,
            },
            Annotation::Marker {
                x: 65536.0,
                y: hockney(r_inf * 0.82, n_half, 65536.0) * 0.78,
                label: "dip at 64 KiB (GSO boundary)".into(),
                axis: YAxis::Y,
            },
            Annotation::XBand {
                from: 1.0,
                to: 64.0,
                label: "syscall-bound".into(),
            },
        ],
        overlays: vec![Overlay {
            name: "Hockney fit (r∞ 94.1 Gbit/s, n½ 6.2 KiB)".into(),
            points: (0..=80)
                .map(|i| {
                    let n = 2f64.powf(f64::from(i) / 4.0);
                    (n, hockney(r_inf, n_half, n))
                })
                .collect(),
            axis: YAxis::Y,
            style: None,
        }],
    }
}

/// Throughput and latency on two y axes over offered load, with a tbf reference line.
pub fn two_axes() -> Figure {
    let loads: Vec<f64> = (1..=10).map(|i| f64::from(i) * 10e6).collect();
    let tput: Vec<(f64, f64)> = loads.iter().map(|&l| (l, l.min(100e6) * 0.97)).collect();
    let lat: Vec<(f64, f64)> = loads
        .iter()
        .map(|&l| (l, 40_000.0 + 2e12 / (101e6 - l.min(100e6))))
        .collect();
    Figure {
        heading: Heading::new(
            "Shaped link: throughput and latency vs offered load",
            "udp_stream · tbf 100 Mbit/s on veth · 2026-11-24",
        ),
        x: Axis::linear("offered load", Unit::BitsPerSecond),
        y: Axis::linear("throughput", Unit::BitsPerSecond),
        y2: Some(Axis::log10("p99 latency", Unit::Nanoseconds)),
        series: vec![
            Series::new("throughput", SeriesKind::LineWithPoints, &tput),
            Series::new("p99 latency", SeriesKind::LineWithPoints, &lat).on_y2(),
        ],
        annotations: vec![Annotation::HLine {
            y: 100e6,
            label: "tbf 100 Mbit/s".into(),
            axis: YAxis::Y,
        }],
        overlays: vec![],
    }
}

/// CPU breakdown per MTU, copy vs zero-copy, stacked (Trapeze fig. 5 style).
pub fn cpu_bars() -> BarFigure {
    let comps = ["user", "sys: copy", "sys: TCP/IP", "softirq", "idle"];
    let v = |a: [f64; 5]| a.to_vec();
    BarFigure {
        heading: Heading::new(
            "Receiver CPU breakdown per MTU",
            "tcp_stream · 10 s · perf cpu-clock samples · 2026-11-24",
        ),
        categories: vec!["MTU 1500".into(), "MTU 9000".into(), "MTU 65520".into()],
        category_label: "path MTU".into(),
        groups: vec!["copy".into(), "zero-copy".into()],
        stacks: comps.iter().map(|s| s.to_string()).collect(),
        values: vec![
            vec![
                v([4.0, 38.0, 31.0, 22.0, 5.0]),
                v([5.0, 6.0, 35.0, 26.0, 28.0]),
            ],
            vec![
                v([4.0, 41.0, 18.0, 11.0, 26.0]),
                v([5.0, 5.0, 20.0, 12.0, 58.0]),
            ],
            vec![
                v([3.0, 44.0, 9.0, 6.0, 38.0]),
                v([4.0, 4.0, 11.0, 7.0, 74.0]),
            ],
        ],
        value_axis: Axis::linear("CPU time", Unit::Percent).with_range(0.0, 100.0),
        orientation: Orientation::Vertical,
        show_totals: false,
        errors: Vec::new(),
    }
}

/// A tuning ladder as horizontal bars with values.
pub fn ladder() -> BarFigure {
    let steps = [
        ("baseline (defaults)", 21.3e9),
        ("+ GRO/GSO on", 38.9e9),
        ("+ MTU 9000", 61.2e9),
        ("+ 4 MiB socket buffers", 72.5e9),
        ("+ IRQ/app pinning", 80.1e9),
        ("+ MSG_ZEROCOPY", 94.1e9),
    ];
    BarFigure {
        heading: Heading::new(
            "Tuning ladder: single-flow throughput",
            "tcp_stream · veth · each step adds one change · 2026-11-24",
        ),
        categories: steps.iter().map(|s| s.0.to_string()).collect(),
        category_label: String::new(),
        groups: vec![String::new()],
        stacks: vec!["throughput".into()],
        values: steps.iter().map(|s| vec![vec![s.1]]).collect(),
        value_axis: Axis::linear("throughput", Unit::BitsPerSecond),
        orientation: Orientation::Horizontal,
        show_totals: true,
        // Min-max of three repeated runs, as a study draws them.
        errors: steps
            .iter()
            .map(|s| vec![Some((s.1 * 0.95, s.1 * 1.04))])
            .collect(),
    }
}

/// A latency histogram: log-normal-ish body plus a slow tail, with p50/p99/p99.9.
pub fn histogram() -> HistogramFigure {
    let mut bins = vec![];
    let mut lo: f64 = 5_000.0;
    while lo < 5_000_000.0 {
        let hi = lo * 1.122_018_454; // 20 bins per decade
        let mid = (lo * hi).sqrt();
        let z = (mid / 28_000.0).ln() / 0.35;
        let body = 1e6 * (-0.5 * z * z).exp();
        let tail = 300.0 * (mid / 100_000.0).powf(-1.6) * f64::from(u8::from(mid > 60_000.0));
        bins.push(Bin {
            lo,
            hi,
            count: (body + tail).round() as u64,
        });
        lo = hi;
    }
    HistogramFigure {
        heading: Heading::new(
            "TCP_RR latency distribution",
            "tcp_rr · 1 B request/response · loopback · 2026-11-24 · 12.4 M transactions",
        ),
        x: Axis::log10("round-trip latency", Unit::Nanoseconds),
        bins,
        percentiles: vec![
            Percentile {
                label: "p50".into(),
                value: 28_100.0,
            },
            Percentile {
                label: "p99".into(),
                value: 63_500.0,
            },
            Percentile {
                label: "p99.9".into(),
                value: 212_000.0,
            },
        ],
        tail_panel: true,
    }
}

/// Time series of four flows: throughput per flow and total, retransmits, cwnd, RTT.
pub fn panels() -> PanelFigure {
    let t: Vec<f64> = (0..=120).map(|i| f64::from(i) * 0.25).collect();
    let flows = 4;
    let mut tput = vec![];
    let mut retr = vec![];
    let mut cwnd = vec![];
    let mut rtt = vec![];
    let mut total = vec![0.0; t.len()];
    for f in 0..flows {
        let ff = f64::from(f);
        let rate: Vec<(f64, f64)> = t
            .iter()
            .map(|&s| {
                let v = 23e9 + 3e9 * (s * 0.7 + ff * 1.3).sin()
                    - if s > 14.0 && s < 16.0 { 9e9 } else { 0.0 };
                (s, v)
            })
            .collect();
        for (i, p) in rate.iter().enumerate() {
            total[i] += p.1;
        }
        tput.push(
            Series::new(format!("flow {}", f + 1), SeriesKind::Line, &rate)
                .with_style(f as usize + 1),
        );
        retr.push(
            Series::new(
                format!("flow {}", f + 1),
                SeriesKind::Step,
                &t.iter()
                    .map(|&s| {
                        (
                            s,
                            if s > 14.0 && s < 16.0 {
                                40.0 + 10.0 * ff
                            } else {
                                (s * 3.0 + ff).sin().abs().floor() * 2.0
                            },
                        )
                    })
                    .collect::<Vec<_>>(),
            )
            .with_style(f as usize + 1),
        );
        cwnd.push(
            Series::new(
                format!("flow {}", f + 1),
                SeriesKind::Step,
                &t.iter()
                    .map(|&s| (s, 900.0 + 80.0 * ff + 400.0 * ((s * 0.9 + ff) % 4.0) / 4.0))
                    .collect::<Vec<_>>(),
            )
            .with_style(f as usize + 1),
        );
        rtt.push(
            Series::new(
                format!("flow {}", f + 1),
                SeriesKind::Line,
                &t.iter()
                    .map(|&s| {
                        (
                            s,
                            45_000.0
                                + 9_000.0 * (s * 1.1 + ff).sin().abs()
                                + if s > 14.0 && s < 16.0 { 120_000.0 } else { 0.0 },
                        )
                    })
                    .collect::<Vec<_>>(),
            )
            .with_style(f as usize + 1),
        );
    }
    let total: Vec<(f64, f64)> = t.iter().copied().zip(total).collect();
    tput.insert(
        0,
        Series::new("total", SeriesKind::Line, &total).with_style(0),
    );
    PanelFigure {
        heading: Heading::new(
            "Four parallel flows over 30 s",
            "tcp_stream -P 4 · veth with netem loss burst at 14–16 s · 2026-11-24",
        ),
        x: Axis::linear("time", Unit::Seconds),
        panels: vec![
            Panel {
                y: Axis::linear("throughput", Unit::BitsPerSecond),
                series: tput,
                annotations: vec![Annotation::XBand {
                    from: 14.0,
                    to: 16.0,
                    label: "loss burst".into(),
                }],
            },
            Panel {
                y: Axis::linear("retransmits", Unit::Other("segments/interval".into())),
                series: retr,
                annotations: vec![],
            },
            Panel {
                y: Axis::linear("cwnd", Unit::Other("segments".into())),
                series: cwnd,
                annotations: vec![],
            },
            Panel {
                y: Axis::linear("smoothed RTT", Unit::Nanoseconds),
                series: rtt,
                annotations: vec![],
            },
        ],
    }
}

/// Latency boxes per offered load for two configurations.
pub fn boxes() -> BoxFigure {
    let loads = ["10 %", "30 %", "50 %", "70 %", "90 %", "99 %"];
    let mk = |scale: f64| -> Vec<Option<BoxStats>> {
        loads
            .iter()
            .enumerate()
            .map(|(i, _)| {
                let rho = [0.1, 0.3, 0.5, 0.7, 0.9, 0.99][i];
                let base = 20_000.0 * scale / (1.0 - rho);
                let samples: Vec<f64> = (0..400)
                    .map(|k| {
                        let u = (f64::from(k) + 0.5) / 400.0;
                        base * (1.0 + 0.6 * (-(1.0 - u).ln()))
                    })
                    .collect();
                BoxStats::from_samples(&samples)
            })
            .collect()
    };
    BoxFigure {
        heading: Heading::new(
            "Request latency vs offered load",
            "tcp_rr · 64 B · loopback · 400 samples per box · 2026-11-24",
        ),
        categories: loads.iter().map(|s| s.to_string()).collect(),
        category_label: "offered load (of measured capacity)".into(),
        y: Axis::log10("latency", Unit::Nanoseconds),
        series: vec![
            BoxSeries {
                name: "busy-poll off".into(),
                boxes: mk(1.0),
            },
            BoxSeries {
                name: "busy-poll 50 µs".into(),
                boxes: mk(0.6),
            },
        ],
        whisker_labels: None,
    }
}

/// A sample report with one figure of each kind and every block type, including hostile
/// strings (`<script>`, control characters) that must come out escaped.
pub fn sample_report() -> Result<Report, PlotError> {
    let mut r = Report::new(
        "wirebench report: veth ns-a → ns-b",
        "wirebench 0.1.0 · 2026-11-24 11:52 UTC · host lab-1 · 7 tests",
    );
    let mut s = Section::new("Summary");
    s.push(Block::Verdict(Verdict {
        outcome: Outcome::Holds,
        headline: "Single-flow TCP reaches 94.1 Gbit/s, 94 % of the physical limit".into(),
        detail: "Saturation above 256 KiB messages; the copy path is CPU-bound at 1500 B MTU."
            .into(),
    }));
    s.push(Block::Expectations(vec![
        Expectation {
            statement: "throughput ≥ 90 % of line rate at 64 KiB".into(),
            outcome: Outcome::Holds,
            evidence: "92.3 Gbit/s of 100 Gbit/s (CI 91.8–92.9)".into(),
        },
        Expectation {
            statement: "zero-copy halves receiver sys time".into(),
            outcome: Outcome::DoesNotHold,
            evidence: "sys 47 % → 31 % (−34 %)".into(),
        },
        Expectation {
            statement: "p99.9 latency < 150 µs".into(),
            outcome: Outcome::Inconclusive,
            evidence: "212 µs, but only 3 runs; CI spans 140–260 µs".into(),
        },
    ]));
    s.push(Block::Warnings(vec![
        "CPU frequency scaling was on (governor: schedutil) on the server".into(),
        "escaping check: <script>alert(1)</script> & \u{1} control \u{7} chars".into(),
    ]));
    r.sections.push(s);

    let mut s = Section::new("Throughput vs message size");
    s.push(Block::Paragraph(
        "Each point is the mean of 5 runs of 10 s; bars show the 95 % confidence interval. \
         The dashed curve is the Hockney model fitted to the zero-copy series."
            .into(),
    ));
    s.push(Block::Figure {
        svg: sweep().render_svg()?,
        caption: "Throughput vs message size with Hockney fit.".into(),
    });
    s.push(Block::Table(DataTable {
        caption: "Selected points".into(),
        columns: vec![
            Column::text("message size"),
            Column::num("copy", "Gbit/s"),
            Column::num("zero-copy", "Gbit/s"),
            Column::num("CPU sys", "%"),
        ],
        rows: vec![
            vec!["1 KiB".into(), "11.4".into(), "6.2".into(), "98.0".into()],
            vec!["64 KiB".into(), "59.8".into(), "88.3".into(), "61.5".into()],
            vec!["1 MiB".into(), "77.1".into(), "93.6".into(), "44.0".into()],
        ],
    }));
    s.push(Block::Code {
        caption: "Reproduce".into(),
        code: "wirebench sweep tcp_stream --sizes 1..1M --runs 5 --duration 10s \\\n  --server 10.77.0.2 --zerocopy both".into(),
    });
    r.sections.push(s);

    let mut s = Section::new("Environment");
    s.push(Block::KeyValue(KeyValueTable {
        caption: "Both ends".into(),
        columns: vec!["client".into(), "server".into()],
        rows: vec![
            ("kernel".into(), vec!["6.18.0".into(), "6.18.0".into()]),
            ("MTU".into(), vec!["9000".into(), "1500".into()]),
            (
                "tcp_congestion_control".into(),
                vec!["cubic".into(), "cubic".into()],
            ),
            (
                "CPU".into(),
                vec!["AMD EPYC 2 vCPU".into(), "AMD EPYC 2 vCPU".into()],
            ),
        ],
    }));
    r.sections.push(s);

    let mut s = Section::new("CPU, latency and time series");
    for (svg, cap) in [
        (
            cpu_bars().render_svg()?,
            "Receiver CPU breakdown (perf cpu-clock).",
        ),
        (ladder().render_svg()?, "Tuning ladder."),
        (histogram().render_svg()?, "Latency histogram with tail."),
        (panels().render_svg()?, "Per-flow time series."),
        (boxes().render_svg()?, "Latency vs load."),
        (two_axes().render_svg()?, "Shaped link."),
    ] {
        s.push(Block::Figure {
            svg,
            caption: cap.into(),
        });
    }
    r.sections.push(s);
    Ok(r)
}
