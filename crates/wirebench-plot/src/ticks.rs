//! Axis planning: the drawn range, tick positions and labels, and the axis title with its
//! unit; plus [`PlanCoord`], the plotters coordinate that maps values and hands plotters
//! exactly these ticks (plotters' own log ticks are decade-only and unlabelled by unit).

use std::ops::Range;

use plotters::coord::ranged1d::{
    KeyPointHint, KeyPointWeight, NoDefaultFormatting, Ranged, ValueFormatter,
};

use crate::model::{Axis, Scale, Unit};
use crate::style::{text_width_px, TICK_PX};
use crate::units::{format_value, pick_prefix};

/// A planned axis.
#[derive(Clone, Debug)]
pub(crate) struct AxisPlan {
    /// Scale.
    pub scale: Scale,
    /// Drawn range (values).
    pub lo: f64,
    /// Drawn range (values).
    pub hi: f64,
    /// Labelled ticks.
    pub ticks: Vec<(f64, String)>,
    /// Unlabelled minor grid positions.
    pub minor: Vec<f64>,
    /// Axis description, with unit.
    pub title: String,
}

impl AxisPlan {
    /// Normalised position of `v` in `[0, 1]` along the axis (may fall outside).
    pub fn frac(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => (v - self.lo) / (self.hi - self.lo),
            Scale::Log2 | Scale::Log10 => (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln()),
        }
    }

    /// Whether `v` can be drawn on this axis (finite; positive on log axes).
    pub fn drawable(&self, v: f64) -> bool {
        v.is_finite() && (self.scale == Scale::Linear || v > 0.0)
    }

    /// Widest tick label in pixels.
    pub fn max_label_width(&self) -> f64 {
        self.ticks
            .iter()
            .map(|(_, l)| text_width_px(l, TICK_PX, false))
            .fold(0.0, f64::max)
    }

    /// A category axis: `n` slots, labels at slot centres.
    pub fn categories(names: &[String], title: &str) -> AxisPlan {
        AxisPlan {
            scale: Scale::Linear,
            lo: 0.0,
            hi: names.len().max(1) as f64,
            ticks: names
                .iter()
                .enumerate()
                .map(|(i, n)| (i as f64 + 0.5, n.clone()))
                .collect(),
            minor: vec![],
            title: title.to_string(),
        }
    }
}

/// Finite extent of `values` (positive values only when `positive`).
pub(crate) fn extent(values: impl Iterator<Item = f64>, positive: bool) -> Option<(f64, f64)> {
    let mut r: Option<(f64, f64)> = None;
    for v in values {
        if !v.is_finite() || (positive && v <= 0.0) {
            continue;
        }
        r = Some(match r {
            None => (v, v),
            Some((a, b)) => (a.min(v), b.max(v)),
        });
    }
    r
}

/// Plans `axis` for data spanning `data` over `pixels` of length; `horizontal` axes need
/// room for label widths, vertical ones for label heights.
pub(crate) fn plan(
    axis: &Axis,
    data: Option<(f64, f64)>,
    pixels: f64,
    horizontal: bool,
) -> AxisPlan {
    match axis.scale {
        Scale::Linear => plan_linear(axis, data, pixels, horizontal),
        Scale::Log2 | Scale::Log10 => plan_log(axis, data, pixels, horizontal),
    }
}

/// A "nice" step (1, 2, 2.5, 5 × 10^k) of at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let raw = raw.max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * mag >= raw * (1.0 - 1e-9) {
            return m * mag;
        }
    }
    10.0 * mag
}

/// Decimals needed to write multiples of `step` exactly.
fn decimals_for(step: f64) -> usize {
    (0..8)
        .find(|&d| {
            let s = step * 10f64.powi(d as i32);
            (s - s.round()).abs() < 1e-6 * s.abs().max(1.0)
        })
        .unwrap_or(8)
}

/// The unit part of a linear axis title for prefix symbol `sym`.
fn linear_unit_name(unit: &Unit, sym: &str) -> String {
    match unit {
        Unit::None if sym.is_empty() => String::new(),
        Unit::None => format!("×{}", prefix_multiplier(sym)),
        Unit::Other(o) if sym.is_empty() => o.clone(),
        Unit::Other(o) => format!("×{} {o}", prefix_multiplier(sym)),
        _ => sym.to_string(),
    }
}

fn prefix_multiplier(sym: &str) -> &'static str {
    match sym {
        "k" => "1000",
        "M" => "10⁶",
        _ => "10⁹",
    }
}

fn titled(label: &str, unit_name: &str) -> String {
    match (label.is_empty(), unit_name.is_empty()) {
        (_, true) => label.to_string(),
        (true, false) => unit_name.to_string(),
        (false, false) => format!("{label} ({unit_name})"),
    }
}

fn plan_linear(axis: &Axis, data: Option<(f64, f64)>, pixels: f64, horizontal: bool) -> AxisPlan {
    let fixed = axis
        .range
        .filter(|(a, b)| a.is_finite() && b.is_finite() && a < b);
    let (mut lo, mut hi) = fixed.or(data).unwrap_or((0.0, 1.0));
    if fixed.is_none() && axis.include_zero {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let d = (hi.abs() * 0.1).max(1.0);
        lo -= d;
        hi += d;
    }
    if fixed.is_none() && !horizontal {
        // Keep data and reference lines off the plot's edge (a value on the last tick gets
        // one more step of headroom).
        let pad = (hi - lo) * 0.02;
        if hi != 0.0 {
            hi += pad;
        }
        if lo != 0.0 {
            lo -= pad;
        }
    }
    // Binary units switch prefix only from 10 of it (0–9000 B stays in bytes).
    let threshold = match axis.unit {
        Unit::Bytes | Unit::BytesPerSecond => 10.0,
        Unit::None | Unit::Other(_) => 10.0,
        _ => 1.0,
    };
    let mag = lo.abs().max(hi.abs());
    let (factor, sym) = pick_prefix(&axis.unit, mag / threshold);
    let spacing = if horizontal { 90.0 } else { 45.0 };
    let mut target = (pixels / spacing).clamp(2.0, 10.0);
    loop {
        let step = nice_step((hi - lo) / factor / target) * factor;
        let (dlo, dhi) = if fixed.is_some() {
            (lo, hi)
        } else {
            ((lo / step).floor() * step, (hi / step).ceil() * step)
        };
        let dec = decimals_for(step / factor);
        let first = (dlo / step - 1e-9).ceil() as i64;
        let last = (dhi / step + 1e-9).floor() as i64;
        let ticks: Vec<(f64, String)> = (first..=last)
            .map(|k| {
                let v = k as f64 * step;
                (v, trim_neg_zero(format!("{:.dec$}", v / factor)))
            })
            .collect();
        let fits = !horizontal || {
            let gap = pixels * step / (dhi - dlo);
            let widest = ticks
                .iter()
                .map(|(_, l)| text_width_px(l, TICK_PX, false))
                .fold(0.0, f64::max);
            gap >= widest + 12.0
        };
        if fits || target <= 2.0 {
            return AxisPlan {
                scale: Scale::Linear,
                lo: dlo,
                hi: dhi,
                ticks,
                minor: vec![],
                title: titled(&axis.label, &linear_unit_name(&axis.unit, sym)),
            };
        }
        target = (target * 0.7).max(2.0);
    }
}

fn trim_neg_zero(s: String) -> String {
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string()
    } else {
        s
    }
}

/// The title of a log axis: its ticks carry their own prefixed units, so only units without
/// prefixes are added.
fn log_title(axis: &Axis) -> String {
    match &axis.unit {
        Unit::Percent => titled(&axis.label, "%"),
        Unit::Other(o) => titled(&axis.label, o),
        _ => axis.label.clone(),
    }
}

fn plan_log(axis: &Axis, data: Option<(f64, f64)>, pixels: f64, horizontal: bool) -> AxisPlan {
    let base: f64 = if axis.scale == Scale::Log2 { 2.0 } else { 10.0 };
    let fixed = axis
        .range
        .filter(|(a, b)| a.is_finite() && b.is_finite() && *a > 0.0 && a < b);
    let (mut lo, mut hi) = fixed.or(data).unwrap_or((1.0, base.powi(3)));
    if fixed.is_none() {
        if hi / lo < 1.0 + 1e-9 {
            lo /= base;
            hi *= base;
        }
        let pad = ((hi / lo).ln() * 0.04).max(base.ln() * 0.12);
        lo *= (-pad).exp();
        hi *= pad.exp();
    }
    let lb = |v: f64| v.ln() / base.ln();
    let e_min = (lb(lo) - 1e-9).ceil() as i32;
    let e_max = (lb(hi) + 1e-9).floor() as i32;
    let fits = |ticks: &[(f64, String)]| -> bool {
        if ticks.len() < 2 {
            return true;
        }
        let span = (hi / lo).ln();
        ticks.windows(2).all(|w| {
            let gap = pixels * (w[1].0 / w[0].0).ln() / span;
            if horizontal {
                let need = (text_width_px(&w[0].1, TICK_PX, false)
                    + text_width_px(&w[1].1, TICK_PX, false))
                    / 2.0
                    + 10.0;
                gap >= need
            } else {
                gap >= TICK_PX * 1.8
            }
        })
    };
    let label = |v: f64| format_value(v, &axis.unit);
    let title = log_title(axis);
    let given: Vec<(f64, String)> = axis
        .ticks_at
        .iter()
        .filter(|(v, _)| *v >= lo && *v <= hi)
        .cloned()
        .collect();
    if !given.is_empty() {
        return AxisPlan {
            scale: axis.scale,
            lo,
            hi,
            ticks: given,
            minor: vec![],
            title,
        };
    }
    if e_max - e_min < 1 && base == 10.0 {
        // Less than two powers inside: 1-2-5 steps when three or more fit (they label the
        // whole range evenly on a log axis), else the linear steps below.
        let ticks: Vec<(f64, String)> = (e_min - 1..=e_max + 1)
            .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * base.powi(e)))
            .filter(|v| *v >= lo && *v <= hi)
            .map(|v| (v, label(v)))
            .collect();
        if ticks.len() >= 3 && fits(&ticks) {
            return AxisPlan {
                scale: axis.scale,
                lo,
                hi,
                ticks,
                minor: vec![],
                title,
            };
        }
    }
    if e_max - e_min < 1 {
        // Less than two powers inside: nice linear steps placed on the log axis.
        let mut target = 5.0;
        loop {
            let step = nice_step((hi - lo) / target);
            let first = (lo / step).ceil() as i64;
            let last = (hi / step).floor() as i64;
            let ticks: Vec<(f64, String)> = (first..=last)
                .map(|k| k as f64 * step)
                .filter(|v| *v > 0.0)
                .map(|v| (v, label(v)))
                .collect();
            if fits(&ticks) || target <= 2.0 {
                return AxisPlan {
                    scale: axis.scale,
                    lo,
                    hi,
                    ticks,
                    minor: vec![],
                    title,
                };
            }
            target -= 1.0;
        }
    }
    let strides: &[i32] = if base == 2.0 {
        &[1, 2, 4, 5, 10, 20, 40]
    } else {
        &[1, 2, 3, 5, 10, 20]
    };
    let mut chosen: Vec<(f64, String)> = vec![];
    let mut chosen_stride = 1;
    for &stride in strides {
        let ticks: Vec<(f64, String)> = (e_min..=e_max)
            .filter(|e| e.rem_euclid(stride) == 0)
            .map(|e| base.powi(e))
            .map(|v| (v, label(v)))
            .collect();
        chosen_stride = stride;
        if ticks.len() >= 2 && fits(&ticks) {
            chosen = ticks;
            break;
        }
        if ticks.len() < 2 {
            break;
        }
        chosen = ticks;
    }
    let mut minor = vec![];
    let decades = e_max - e_min;
    if base == 10.0 && decades <= if horizontal { 6 } else { 4 } {
        for e in (e_min - 1)..=e_max {
            for m in 2..=9 {
                let v = f64::from(m) * 10f64.powi(e);
                if v > lo && v < hi {
                    minor.push(v);
                }
            }
        }
        // Few decades: label 2× and 5× too when they fit (then no minor grid: too busy).
        if chosen_stride == 1 && decades <= 2 {
            let mut dense: Vec<(f64, String)> = chosen.clone();
            for &v in &minor {
                let m = (v / 10f64.powf(v.log10().floor())).round();
                if m == 2.0 || m == 5.0 {
                    dense.push((v, label(v)));
                }
            }
            dense.sort_by(|a, b| a.0.total_cmp(&b.0));
            if fits(&dense) {
                chosen = dense;
                minor.clear();
            }
        }
    } else if base == 2.0 && chosen_stride > 1 && pixels / f64::from(e_max - e_min + 1) >= 6.0 {
        minor = (e_min..=e_max)
            .filter(|e| e.rem_euclid(chosen_stride) != 0)
            .map(|e| 2f64.powi(e))
            .collect();
    }
    AxisPlan {
        scale: axis.scale,
        lo,
        hi,
        ticks: chosen,
        minor,
        title,
    }
}

/// plotters coordinate over an [`AxisPlan`].
#[derive(Clone, Debug)]
pub(crate) struct PlanCoord(pub AxisPlan);

impl Ranged for PlanCoord {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let f = self.0.frac(*value);
        let f = if f.is_finite() {
            f.clamp(-10.0, 11.0)
        } else {
            -10.0
        };
        let span = f64::from(limit.1 - limit.0);
        (f64::from(limit.0) + span * f).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        let mut v: Vec<f64> = self.0.ticks.iter().map(|t| t.0).collect();
        if let KeyPointWeight::Any = hint.weight() {
            v.extend(self.0.minor.iter().copied());
        }
        v
    }

    fn range(&self) -> Range<f64> {
        self.0.lo..self.0.hi
    }
}

impl ValueFormatter<f64> for PlanCoord {
    fn format_ext(&self, value: &f64) -> String {
        self.0
            .ticks
            .iter()
            .find(|t| (t.0 - value).abs() <= 1e-9 * t.0.abs().max(1e-300))
            .map(|t| t.1.clone())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(p: &AxisPlan) -> Vec<&str> {
        p.ticks.iter().map(|t| t.1.as_str()).collect()
    }

    /// A log axis given its ticks (a study's MTUs) shows exactly those, not powers of two.
    #[test]
    fn given_ticks_replace_the_automatic_ones() {
        let ticks: Vec<(f64, String)> = [1500.0, 9000.0, 65520.0]
            .iter()
            .map(|v| (*v, format!("{v}")))
            .collect();
        let ax = Axis::log2("MTU", Unit::Bytes).with_ticks_at(ticks.clone());
        let p = plan(&ax, Some((1500.0, 65520.0)), 700.0, true);
        assert_eq!(p.ticks, ticks);
        assert!(p.minor.is_empty());
        let auto = plan(
            &Axis::log2("MTU", Unit::Bytes),
            Some((1500.0, 65520.0)),
            700.0,
            true,
        );
        assert_ne!(auto.ticks, ticks);
    }

    #[test]
    fn log2_bytes_ticks_are_powers_of_two_with_units() {
        let ax = Axis::log2("message size", Unit::Bytes);
        let p = plan(&ax, Some((1.0, 1_048_576.0)), 700.0, true);
        let l = labels(&p);
        assert!(l.contains(&"1 KiB") && l.contains(&"1 MiB"), "{l:?}");
        for (v, _) in &p.ticks {
            assert_eq!(v.log2().fract(), 0.0, "tick {v} is not a power of two");
        }
        // Labels must not crowd: 21 powers of two cannot all be labelled on 700 px.
        assert!(p.ticks.len() < 21 && p.ticks.len() >= 5, "{l:?}");
        assert_eq!(p.title, "message size");
    }

    #[test]
    fn linear_rate_axis_picks_one_prefix() {
        let ax = Axis::linear("throughput", Unit::BitsPerSecond);
        let p = plan(&ax, Some((3e9, 94.1e9)), 350.0, false);
        assert_eq!(p.title, "throughput (Gbit/s)");
        assert_eq!(p.lo, 0.0);
        assert!(p.hi >= 94.1e9);
        assert_eq!(p.ticks[0].1, "0");
        assert!(
            labels(&p).contains(&"100") || labels(&p).contains(&"80"),
            "{:?}",
            labels(&p)
        );
    }

    #[test]
    fn log10_latency_ticks() {
        let ax = Axis::log10("latency", Unit::Nanoseconds);
        let p = plan(&ax, Some((8_000.0, 3_000_000.0)), 700.0, true);
        let l = labels(&p);
        assert!(l.contains(&"10 µs") && l.contains(&"1 ms"), "{l:?}");
        // Two decades: 2× and 5× are labelled too, and then there is no minor grid.
        assert!(l.contains(&"20 µs") && l.contains(&"500 µs"), "{l:?}");
        assert!(p.minor.is_empty());
        // Six decades on a short vertical axis: decades only.
        let p = plan(&ax, Some((1e3, 1e9)), 150.0, false);
        assert!(
            p.ticks.iter().all(|t| t.0.log10().fract() == 0.0),
            "{:?}",
            labels(&p)
        );
    }

    #[test]
    fn a_log_range_of_one_power_has_1_2_5_ticks() {
        // 15 µs .. 550 µs holds only 100 µs as a power of ten: 20, 50, 100, 200, 500 µs label
        // it evenly from bottom to top (linear steps would leave the lower half bare).
        let ax = Axis::log10("latency", Unit::Nanoseconds);
        let p = plan(&ax, Some((15_000.0, 550_000.0)), 300.0, false);
        let v: Vec<f64> = p.ticks.iter().map(|t| t.0).collect();
        assert_eq!(v, [20_000.0, 50_000.0, 100_000.0, 200_000.0, 500_000.0]);
    }

    #[test]
    fn narrow_log_range_still_has_ticks() {
        let ax = Axis::log10("latency", Unit::Nanoseconds);
        let p = plan(&ax, Some((80_000.0, 95_000.0)), 700.0, true);
        assert!(p.ticks.len() >= 2, "{:?}", labels(&p));
    }
}
