//! How long a sweep's plan will take, said before the first point (and by `--dry-run`).
//!
//! A point takes its runs × (warm-up + measured length) plus [`POINT_OVERHEAD_S`] of setup
//! (connections, the server's control exchange, the result's analysis). The measured length
//! is `-t` when given; otherwise it adapts between `--point-time` (the estimate) and
//! `--max-point-time` (the bound). Re-measurements of dip candidates come on top.

use wirebench_model::text::shell_line;

use super::plan::{point_spec, Plan};

/// Setup time per point, seconds, beyond its warm-up and measured length: measured on a
/// 2-vCPU AMD EPYC against the embedded loopback server (25 stream points of `-t 0.2`
/// took 5.94 s, 0.04 s each beyond their 0.2 s; 41 rr points 0.015 s each), rounded up. A
/// far server adds its round trips.
pub const POINT_OVERHEAD_S: f64 = 0.05;

/// A plan's estimated time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Points to run.
    pub points: usize,
    /// Seconds if every point runs its first length (`--point-time`, or `-t`) once.
    pub expected_s: f64,
    /// Seconds if every point runs the longest it may (`--max-point-time`, the most runs of
    /// `--iterations`).
    pub longest_s: f64,
    /// Warm-up per run, seconds.
    pub warmup_s: f64,
    /// First measured length per run, seconds.
    pub length_s: f64,
}

/// The estimate of running `points` points of `plan`.
pub fn estimate(plan: &Plan, points: usize) -> Estimate {
    let o = &plan.options;
    let first = plan.points.first().map(|p| {
        let mut argv = p.argv.clone();
        if !o.fixed_time {
            argv.extend(["-t".to_string(), o.point_time_s.to_string()]);
        }
        argv
    });
    let (warmup_s, fixed_s, runs) = match first.as_deref().map(point_spec) {
        Some(Ok((spec, c, _))) => (
            spec.common.warmup_ms as f64 / 1000.0,
            spec.common.duration_ms as f64 / 1000.0,
            c.iterations.unwrap_or((1, 1)),
        ),
        _ => (0.0, o.point_time_s, (1, 1)),
    };
    let (length_s, max_s) = if o.fixed_time {
        (fixed_s, fixed_s)
    } else {
        (o.point_time_s, o.max_point_time_s)
    };
    let n = points as f64;
    Estimate {
        points,
        expected_s: n * (f64::from(runs.0) * (warmup_s + length_s) + POINT_OVERHEAD_S),
        longest_s: n * (f64::from(runs.1) * (warmup_s + max_s) + POINT_OVERHEAD_S),
        warmup_s,
        length_s,
    }
}

/// Seconds as `2 h 5 min`, `3 min 20 s` or `4.5 s`.
pub fn duration_text(s: f64) -> String {
    let whole = s.round() as u64;
    if whole >= 3600 {
        format!("{} h {} min", whole / 3600, (whole % 3600) / 60)
    } else if whole >= 60 {
        format!("{} min {} s", whole / 60, whole % 60)
    } else {
        format!("{s:.1} s")
    }
}

/// The line said before the first point: the points and the estimated time.
pub fn line(plan: &Plan, e: &Estimate) -> String {
    let o = &plan.options;
    let mut t = format!(
        "sweep of {}: {} point{}, about {} ({} per point: {} s measured{} + {} s setup)",
        plan.test_cmd,
        e.points,
        if e.points == 1 { "" } else { "s" },
        duration_text(e.expected_s),
        duration_text(e.expected_s / e.points.max(1) as f64),
        e.length_s,
        if e.warmup_s > 0.0 {
            format!(" + {} s warm-up", e.warmup_s)
        } else {
            String::new()
        },
        POINT_OVERHEAD_S
    );
    if e.longest_s > e.expected_s * 1.001 {
        t.push_str(&format!(
            "; at most {} if every point runs {}",
            duration_text(e.longest_s),
            if o.fixed_time {
                "the most --iterations".to_string()
            } else {
                format!("the longest {} s", o.max_point_time_s)
            }
        ));
    }
    if o.remeasure && plan.factors.iter().any(|f| f.name.is_message_size()) {
        t.push_str("; re-measured dip candidates add points");
    }
    t
}

/// `--dry-run`: the estimate line, then each point's command (the `-t` a point starts with
/// when its length adapts).
pub fn dry_run_text(plan: &Plan, todo: &[&super::plan::PlannedPoint]) -> String {
    let e = estimate(plan, todo.len());
    let mut t = format!("{}\n", line(plan, &e));
    if !plan.options.fixed_time {
        t.push_str(&format!(
            "each point starts at -t {} and runs longer (up to {} s) until it counts {} calls, \
             datagrams or transactions\n",
            plan.options.point_time_s, plan.options.max_point_time_s, plan.options.min_count
        ));
    }
    for p in todo {
        let mut argv = vec!["wirebench".to_string()];
        argv.extend(p.argv.iter().cloned());
        if !plan.options.fixed_time {
            argv.extend(["-t".to_string(), plan.options.point_time_s.to_string()]);
        }
        t.push_str(&shell_line(&argv));
        t.push('\n');
    }
    t.push_str("dry run: nothing was run\n");
    t
}
