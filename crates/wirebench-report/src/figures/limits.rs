//! The figure of `wirebench limits`: memory copy and checksum bandwidth against the buffer
//! size, the loopback TCP ceiling marked on the same axis.

use wirebench_model::limits::{LimitsResult, MemoryRow};
use wirebench_plot::{Annotation, Axis, Figure, Heading, Point, Series, SeriesKind, Unit, YAxis};
use wirebench_stats::summary::Spread;

use super::{Drawing, FigureKind, Named};
use crate::print::limits::minute_utc;

/// One bandwidth series: each size's median, the bar from its smallest to its largest batch.
fn series(
    name: &str,
    rows: &[MemoryRow],
    pick: &dyn Fn(&MemoryRow) -> Option<&Spread>,
    style: usize,
) -> Option<Series> {
    let points: Vec<Point> = rows
        .iter()
        .filter_map(|r| {
            let s = pick(r)?;
            Some(Point::with_err(
                r.buffer_bytes as f64,
                s.median,
                s.min,
                s.max,
            ))
        })
        .collect();
    (!points.is_empty()).then(|| Series {
        name: name.into(),
        kind: SeriesKind::LineWithPoints,
        points,
        axis: YAxis::Y,
        style: Some(style),
    })
}

/// The figures of a limits document.
pub fn limits_figures(l: &LimitsResult) -> Vec<Named> {
    let threads = l.cpus_used.len().max(1);
    let all: Vec<Series> = [
        series(
            "copy, 1 thread",
            &l.memory,
            &|r| r.copy_one_thread_bytes_per_s.as_ref(),
            0,
        ),
        series(
            &format!("copy, {threads} threads (sum)"),
            &l.memory,
            &|r| r.copy_all_threads_bytes_per_s.as_ref(),
            1,
        ),
        series(
            "Internet checksum, 1 thread",
            &l.memory,
            &|r| r.checksum_bytes_per_s.as_ref(),
            2,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    if all.is_empty() {
        return Vec::new();
    }
    let annotations: Vec<Annotation> = l
        .loopback
        .iter()
        .map(|lo| Annotation::HLine {
            y: lo.throughput_bps / 8.0,
            label: format!(
                "loopback TCP ceiling, {} flow (payload): {}",
                lo.flows,
                wirebench_plot::units::format_value(
                    lo.throughput_bps / 8.0,
                    &Unit::DecimalBytesPerSecond
                )
            ),
            axis: YAxis::Y,
        })
        .collect();
    let host = l
        .hostname
        .as_deref()
        .map_or("this machine".into(), wirebench_model::text::escape);
    let mut probes = Vec::new();
    if let Some(s) = &l.syscall {
        probes.push(format!(
            "a trivial system call ({}) costs {:.0} ns (median)",
            wirebench_model::text::escape(&s.syscall),
            s.syscall_ns.median
        ));
    }
    if let Some(w) = &l.wakeup {
        let cross = w.wakeup_cross_cpu_ns.as_ref().map_or(String::new(), |c| {
            format!(", {:.1} µs across two CPUs", c.median / 1e3)
        });
        probes.push(format!(
            "a {} wake-up takes {:.1} µs on one CPU{cross} (medians)",
            wirebench_model::text::escape(&w.mechanism),
            w.wakeup_same_cpu_ns.median / 1e3
        ));
    }
    let probes = if probes.is_empty() {
        String::new()
    } else {
        format!(" On this machine {}.", probes.join("; "))
    };
    vec![Named {
        kind: FigureKind::Limits,
        figure: Drawing::Xy(Figure {
            heading: Heading::new(
                "Memory copy and checksum bandwidth vs buffer size",
                format!("limits · {host} · {}", minute_utc(&l.started_utc)),
            ),
            x: Axis::log2("buffer size", Unit::Bytes),
            y: Axis::linear("bytes processed", Unit::DecimalBytesPerSecond),
            series: all,
            annotations,
            ..Figure::default()
        }),
        caption: format!(
            "wirebench limits: bytes copied (memcpy between two buffers of the size) or \
             checksummed (wirebench's RFC 1071 code) per second, the median of the batches \
             with a bar from the slowest to the fastest; one pinned thread, and one pinned \
             thread per CPU on {threads} CPUs with their own buffers, summed. The line is the \
             loopback TCP ceiling's payload rate in bytes per second. Bandwidths in GB/s \
             (10⁹ bytes per second), as `wirebench limits` prints them.{probes}"
        ),
    }]
}
