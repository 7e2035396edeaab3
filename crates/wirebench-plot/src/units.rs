//! Unit-aware number formatting: bytes with binary prefixes (KiB, MiB), rates with decimal
//! prefixes (Mbit/s, Gbit/s), times from ns to s. Used for tick labels and free for callers
//! writing annotation labels ("n½ = 6.2 KiB", "saturation 94.1 Gbit/s").

use crate::model::Unit;

const BYTES: &[(f64, &str)] = &[
    (1.0, "B"),
    (1024.0, "KiB"),
    (1_048_576.0, "MiB"),
    (1_073_741_824.0, "GiB"),
    (1_099_511_627_776.0, "TiB"),
];
const BYTES_PER_S: &[(f64, &str)] = &[
    (1.0, "B/s"),
    (1024.0, "KiB/s"),
    (1_048_576.0, "MiB/s"),
    (1_073_741_824.0, "GiB/s"),
    (1_099_511_627_776.0, "TiB/s"),
];
const DECIMAL_BYTES_PER_S: &[(f64, &str)] = &[
    (1.0, "B/s"),
    (1e3, "kB/s"),
    (1e6, "MB/s"),
    (1e9, "GB/s"),
    (1e12, "TB/s"),
];
const BITS_PER_S: &[(f64, &str)] = &[
    (1.0, "bit/s"),
    (1e3, "kbit/s"),
    (1e6, "Mbit/s"),
    (1e9, "Gbit/s"),
    (1e12, "Tbit/s"),
];
const NANOS: &[(f64, &str)] = &[(1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")];
const SECONDS: &[(f64, &str)] = &[(1e-9, "ns"), (1e-6, "µs"), (1e-3, "ms"), (1.0, "s")];
const PER_S: &[(f64, &str)] = &[(1.0, "/s"), (1e3, "k/s"), (1e6, "M/s"), (1e9, "G/s")];
const PLAIN: &[(f64, &str)] = &[(1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G")];
const PERCENT: &[(f64, &str)] = &[(1.0, "%")];

/// The prefix table of a unit: `(factor, symbol)` in increasing order.
pub(crate) fn prefixes(unit: &Unit) -> &'static [(f64, &'static str)] {
    match unit {
        Unit::Bytes => BYTES,
        Unit::BytesPerSecond => BYTES_PER_S,
        Unit::DecimalBytesPerSecond => DECIMAL_BYTES_PER_S,
        Unit::BitsPerSecond => BITS_PER_S,
        Unit::Nanoseconds => NANOS,
        Unit::Seconds => SECONDS,
        Unit::PerSecond => PER_S,
        Unit::Percent => PERCENT,
        Unit::None | Unit::Other(_) => PLAIN,
    }
}

/// The largest prefix whose factor is at most `magnitude`.
pub(crate) fn pick_prefix(unit: &Unit, magnitude: f64) -> (f64, &'static str) {
    let table = prefixes(unit);
    let mut best = table[0];
    for &(f, s) in table {
        if magnitude >= f {
            best = (f, s);
        }
    }
    // Seconds below 1 ns still read in ns.
    best
}

/// `x` with three significant digits at most, trailing zeros dropped ("94.1", "6.2", "64",
/// "1023").
pub fn format_sig(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let a = x.abs();
    let s = if a >= 99.95 {
        format!("{x:.0}")
    } else if a >= 9.995 {
        format!("{x:.1}")
    } else if a >= 0.9995 || a == 0.0 {
        format!("{x:.2}")
    } else {
        // Three significant digits below one.
        let d = (-a.log10()).floor() as usize + 3;
        format!("{x:.d$}")
    };
    trim_zeros(s)
}

/// Drops trailing zeros of a decimal ("1.50" → "1.5", "2.00" → "2") and a negative zero.
pub(crate) fn trim_zeros(s: String) -> String {
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".to_string()
    } else {
        s
    }
}

fn with_prefix(v: f64, unit: &Unit) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let (f, sym) = pick_prefix(unit, v.abs());
    let num = format_sig(v / f);
    let other = match unit {
        Unit::Other(s) => s.as_str(),
        _ => "",
    };
    match (sym, other) {
        ("", "") => num,
        ("", o) => format!("{num} {o}"),
        ("%", _) => format!("{num} %"),
        (s, "") if matches!(unit, Unit::None) => format!("{num}{s}"),
        (s, "") => format!("{num} {s}"),
        (s, o) => format!("{num}{s} {o}"),
    }
}

/// Bytes with binary prefixes: "512 B", "6.2 KiB", "1.5 MiB".
pub fn format_bytes(bytes: f64) -> String {
    with_prefix(bytes, &Unit::Bytes)
}

/// A bit rate with decimal prefixes: "940 Mbit/s", "94.1 Gbit/s".
pub fn format_bits_per_s(bps: f64) -> String {
    with_prefix(bps, &Unit::BitsPerSecond)
}

/// A byte rate with binary prefixes: "118 MiB/s".
pub fn format_bytes_per_s(bytes_per_s: f64) -> String {
    with_prefix(bytes_per_s, &Unit::BytesPerSecond)
}

/// A duration given in nanoseconds: "850 ns", "12.3 µs", "1.05 ms", "2 s".
pub fn format_ns(ns: f64) -> String {
    with_prefix(ns, &Unit::Nanoseconds)
}

/// Any value in `unit`, compact with its own prefix (how log-axis ticks are written).
pub fn format_value(v: f64, unit: &Unit) -> String {
    with_prefix(v, unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_use_binary_prefixes() {
        assert_eq!(format_bytes(0.0), "0 B");
        assert_eq!(format_bytes(512.0), "512 B");
        assert_eq!(format_bytes(1024.0), "1 KiB");
        assert_eq!(format_bytes(6.2 * 1024.0), "6.2 KiB");
        assert_eq!(format_bytes(65536.0), "64 KiB");
        assert_eq!(format_bytes(1.5 * 1_048_576.0), "1.5 MiB");
        assert_eq!(format_bytes(3.0 * 1_073_741_824.0), "3 GiB");
    }

    #[test]
    fn rates_use_decimal_prefixes() {
        assert_eq!(format_bits_per_s(94.1e9), "94.1 Gbit/s");
        assert_eq!(format_bits_per_s(100e6), "100 Mbit/s");
        assert_eq!(format_bits_per_s(999.0), "999 bit/s");
        assert_eq!(format_bytes_per_s(118.0 * 1_048_576.0), "118 MiB/s");
        assert_eq!(
            format_value(35.77e9, &Unit::DecimalBytesPerSecond),
            "35.8 GB/s"
        );
    }

    #[test]
    fn times_scale_from_ns() {
        assert_eq!(format_ns(850.0), "850 ns");
        assert_eq!(format_ns(12_340.0), "12.3 µs");
        assert_eq!(format_ns(1_050_000.0), "1.05 ms");
        assert_eq!(format_ns(2e9), "2 s");
        assert_eq!(format_value(0.0123, &Unit::Seconds), "12.3 ms");
    }

    #[test]
    fn plain_and_other_units() {
        assert_eq!(format_value(12_000.0, &Unit::None), "12k");
        assert_eq!(
            format_value(42.0, &Unit::Other("segments".into())),
            "42 segments"
        );
        assert_eq!(format_value(99.5, &Unit::Percent), "99.5 %");
        assert_eq!(format_value(2500.0, &Unit::PerSecond), "2.5 k/s");
        assert_eq!(format_sig(0.001234), "0.00123");
        assert_eq!(format_sig(-0.0), "0");
    }
}
